/**
 * A real gRPC client of keygate's gRPC authorizer, built with grpc-js from the very
 * `.proto` definition the server loads (src/authorizer-grpc/envoy-protos.ts): Envoy's
 * `Authorization/Check` and the health service. `check()` asks about one original
 * request as Envoy's ext_authz filter would (method, path, host, lower-case headers,
 * the downstream client as `attributes.source.address`).
 */
import * as grpc from '@grpc/grpc-js'
import { loadSync } from '@grpc/proto-loader'
import { protoPath as healthProto } from 'grpc-health-check'
import type { Test } from 'tap'
import {
  EXTERNAL_AUTH_PROTO, includeDirs, LOAD_OPTIONS, type CheckResponse, type HeaderValueOption
} from '../../src/authorizer-grpc/envoy-protos.js'

export interface CheckOptions {
  headers?: Record<string, string>
  /** the original client's address Envoy reports (default 203.0.113.9) */
  source?: string
  host?: string
  /** the headers as Envoy's `encode_raw_headers` sends them, instead of the map */
  rawHeaderList?: boolean
}

/** A CheckResponse, with its headers as name -> value. */
export interface Checked {
  response: CheckResponse
  /** the response's status code (0: OK) */
  code: number
  /** ok_response.headers, or denied_response.headers */
  headers: Record<string, string>
  remove: string[]
  responseHeaders: Record<string, string>
  /** denied_response's HTTP status; 200 when allowed */
  httpStatus: number
  body: string
}

export interface AuthzClient {
  check: (method: string, path: string, key?: string, opts?: CheckOptions) => Promise<Checked>
  health: (service?: string) => Promise<string>
  /** a health Watch stream: the statuses it has sent so far, and whether it has ended */
  watch: (service?: string) => { statuses: string[], ended: () => boolean, cancel: () => void }
  close: () => void
}

type Unary = (req: unknown, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void
type Constructor = new (address: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => grpc.Client

function constructorOf (def: grpc.GrpcObject, name: string): Constructor {
  let node: unknown = def
  for (const part of name.split('.')) node = (node as Record<string, unknown>)[part]
  return node as Constructor
}

// (enums as numbers: denied_response's HTTP status reads as 401, not `Unauthorized`)
const AUTH = loadSync(EXTERNAL_AUTH_PROTO, { ...LOAD_OPTIONS, enums: Number, includeDirs: includeDirs() })

/** `options`: channel options (`grpc.ssl_target_name_override` for a test certificate) */
export function authzClient (
  t: Test | undefined, port: number, creds = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}
): AuthzClient {
  const auth = grpc.loadPackageDefinition(AUTH)
  const health = grpc.loadPackageDefinition(loadSync(healthProto, LOAD_OPTIONS))
  const Authorization = constructorOf(auth, 'envoy.service.auth.v3.Authorization')
  const Health = constructorOf(health, 'grpc.health.v1.Health')
  const client = new Authorization(`127.0.0.1:${port}`, creds, options)
  const healthClient = new Health(`127.0.0.1:${port}`, creds, options)
  t?.teardown(() => { client.close(); healthClient.close() })

  const call = async (c: grpc.Client, method: string, req: unknown): Promise<unknown> =>
    await new Promise((resolve, reject) => {
      (c as unknown as Record<string, Unary>)[method]?.call(c, req, (err, res) => {
        if (err !== null) reject(err)
        else resolve(res)
      })
    })

  return {
    async check (method, path, key, opts = {}) {
      const headers: Record<string, string> = {
        ':authority': opts.host ?? 'api.example', ':method': method, ':path': path, ...opts.headers
      }
      if (key !== undefined) headers.authorization = `Bearer ${key}`
      const http = opts.rawHeaderList === true
        ? { header_map: { headers: Object.entries(headers).map(([k, v]) => ({ key: k, raw_value: Buffer.from(v, 'latin1') })) } }
        : { headers }
      const request = {
        attributes: {
          source: { address: { socket_address: { address: opts.source ?? '203.0.113.9', port_value: 40000 } } },
          request: { http: { id: '1', method, path, host: opts.host ?? 'api.example', scheme: 'http', protocol: 'HTTP/1.1', ...http } }
        }
      }
      const response = await call(client, 'Check', request) as CheckResponse
      const ok = response.ok_response
      const denied = response.denied_response
      const map = (list: HeaderValueOption[] | undefined): Record<string, string> =>
        Object.fromEntries((list ?? []).map((h) => [h.header.key, h.header.value]))
      return {
        response,
        code: response.status?.code ?? 0,
        headers: map(ok?.headers ?? denied?.headers),
        remove: ok?.headers_to_remove ?? [],
        responseHeaders: map(ok?.response_headers_to_add),
        httpStatus: denied === undefined ? 200 : Number(denied.status?.code ?? 0),
        body: denied?.body ?? ''
      }
    },
    async health (service = '') {
      const res = await call(healthClient, 'Check', { service }) as { status: string }
      return res.status
    },
    watch (service = '') {
      const statuses: string[] = []
      let ended = false
      type Stream = NodeJS.EventEmitter & { cancel: () => void }
      const stream = (healthClient as unknown as { watch: (req: unknown) => Stream }).watch({ service })
      stream.on('data', (m: { status: string }) => { statuses.push(m.status) })
      stream.on('error', () => { ended = true })
      stream.on('end', () => { ended = true })
      t?.teardown(() => { stream.cancel() })
      return { statuses, ended: () => ended, cancel: () => { stream.cancel() } }
    },
    close () { client.close(); healthClient.close() }
  }
}
