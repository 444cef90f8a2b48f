/**
 * A local OTLP/HTTP receiver, as a collector would be: a node:http server on a free port
 * that takes `POST /v1/traces` (OTLP protobuf or OTLP JSON, by its content type) and
 * `POST /v1/logs` (OTLP JSON), answers 200, keeps every body's raw bytes (to search for
 * what must never be exported) and decodes its spans and log records. `refuse` makes it
 * answer 400 (not retryable) to logs until set back.
 *
 * Protobuf bodies are decoded by protobufjs code that OpenTelemetry generated from the
 * OTLP .proto files (the `otlp-transformer-generated` devDependency:
 * `@opentelemetry/otlp-transformer` 0.215.0, whose package still ships it), not by the
 * exporter's own serialiser, so a span that arrives is one the protocol's schema reads.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a root span */
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 2 SERVER, 3 CLIENT */
  kind: number
  attributes: Record<string, string | number | boolean>
  /** OTLP's status code: 0 unset, 1 ok, 2 error */
  statusCode: number
  startNs: bigint
  endNs: bigint
  /** the resource's attributes (service.name...) */
  resource: Record<string, string | number | boolean>
}

export interface ReceivedLog {
  /** OTLP's timeUnixNano */
  timeNs: bigint
  severityNumber: number
  severityText: string
  eventName: string
  body: string
  attributes: Record<string, string | number | boolean>
  resource: Record<string, string | number | boolean>
  scope: string
}

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT/v1/traces */
  url: string
  /** http://127.0.0.1:PORT/v1/logs */
  logsUrl: string
  spans: ReceivedSpan[]
  logs: ReceivedLog[]
  /** true: logs requests are answered 400 (and not kept) */
  refuse: boolean
  /** logs requests answered 400 so far */
  refused: number
  /** every request body as received */
  bodies: Buffer[]
  /** the encoding of each traces request received, in order */
  encodings: Array<'protobuf' | 'json'>
  /** requests to anything but POST /v1/traces with protobuf or JSON */
  rejected: number
  close: () => Promise<void>
}

export const SPAN_KIND_SERVER = 2
export const SPAN_KIND_CLIENT = 3

interface OtlpValue { stringValue?: string, intValue?: string | number, doubleValue?: number, boolValue?: boolean }
interface OtlpAttribute { key: string, value: OtlpValue }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: OtlpAttribute[]
  status?: { code?: number }
  startTimeUnixNano: string | number
  endTimeUnixNano: string | number
}
interface OtlpLogRecord {
  timeUnixNano?: string | number
  severityNumber?: number
  severityText?: string
  eventName?: string
  body?: OtlpValue
  attributes?: OtlpAttribute[]
}
interface OtlpLogsBody {
  resourceLogs?: Array<{
    resource?: { attributes?: OtlpAttribute[] }
    scopeLogs?: Array<{ scope?: { name?: string }, logRecords?: OtlpLogRecord[] }>
  }>
}
interface OtlpBody {
  resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }, scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>
}

/** The protobufjs type of a request body, as the generated code has it. */
interface ProtoType {
  decode: (body: Uint8Array) => object
  toObject: (message: object, options: { longs: StringConstructor, bytes: StringConstructor, enums: NumberConstructor }) => unknown
}
const generated = createRequire(import.meta.url)('otlp-transformer-generated/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoType } } } } }
}
const ExportTraceServiceRequest = generated.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest

/**
 * A protobuf traces request as the JSON encoding's object: 64-bit times as decimal strings, ids as base64 (the
 * protobuf JSON mapping's bytes; hexId reads them), enums as numbers; fields at their default value are absent.
 */
function decodeProtobuf (body: Buffer): OtlpBody {
  return ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: String, bytes: String, enums: Number }) as OtlpBody
}

function attributesOf (list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue
    else if (value.intValue !== undefined) out[key] = Number(value.intValue)
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue
    else if (value.boolValue !== undefined) out[key] = value.boolValue
  }
  return out
}

/** OTLP JSON ids are hex; base64 (the protobuf JSON mapping) is read too. */
function hexId (id: string | undefined): string {
  if (id === undefined || id === '') return ''
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex')
}

export async function startOtlpReceiver (): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const logs: ReceivedLog[] = []
  const bodies: Buffer[] = []
  const encodings: Array<'protobuf' | 'json'> = []
  let rejected = 0
  let refused = 0
  const state = { refuse: false }
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      if (req.method === 'POST' && req.url === '/v1/logs' && String(req.headers['content-type']).startsWith('application/json')) {
        if (state.refuse) {
          refused++
          res.writeHead(400, { 'content-type': 'application/json' }).end('{}')
          return
        }
        bodies.push(body)
        logs.push(...logsOf(JSON.parse(body.toString('utf8')) as OtlpLogsBody))
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
        return
      }
      const type = String(req.headers['content-type'])
      const encoding = type.startsWith('application/x-protobuf') ? 'protobuf' : type.startsWith('application/json') ? 'json' : undefined
      if (req.method !== 'POST' || req.url !== '/v1/traces' || encoding === undefined) {
        rejected++
        res.writeHead(404).end()
        return
      }
      bodies.push(body)
      encodings.push(encoding)
      const decoded = encoding === 'protobuf' ? decodeProtobuf(body) : JSON.parse(body.toString('utf8')) as OtlpBody
      for (const rs of decoded.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes)
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: hexId(s.traceId),
              spanId: hexId(s.spanId),
              parentSpanId: hexId(s.parentSpanId),
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              statusCode: s.status?.code ?? 0,
              startNs: BigInt(s.startTimeUnixNano),
              endNs: BigInt(s.endTimeUnixNano),
              resource
            })
          }
        }
      }
      // an empty ExportTraceServiceResponse, in the request's encoding
      if (encoding === 'protobuf') res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    logsUrl: `http://127.0.0.1:${port}/v1/logs`,
    spans,
    logs,
    bodies,
    encodings,
    get rejected () { return rejected },
    get refused () { return refused },
    get refuse () { return state.refuse },
    set refuse (v: boolean) { state.refuse = v },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}

function logsOf (decoded: OtlpLogsBody): ReceivedLog[] {
  const out: ReceivedLog[] = []
  for (const rl of decoded.resourceLogs ?? []) {
    const resource = attributesOf(rl.resource?.attributes)
    for (const sl of rl.scopeLogs ?? []) {
      for (const l of sl.logRecords ?? []) {
        out.push({
          timeNs: BigInt(l.timeUnixNano ?? 0),
          severityNumber: l.severityNumber ?? 0,
          severityText: l.severityText ?? '',
          eventName: l.eventName ?? '',
          body: l.body?.stringValue ?? '',
          attributes: attributesOf(l.attributes),
          resource,
          scope: sl.scope?.name ?? ''
        })
      }
    }
  }
  return out
}
