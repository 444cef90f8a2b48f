/**
 * The Check method's wire codec, in place of @grpc/proto-loader's for this one method:
 *
 *   request    protobufjs's `Type.decode` of the CheckRequest, read as decoded: no
 *              conversion of the whole message to a plain object (proto-loader's
 *              `toObject` with 64-bit integers as strings and enums as names, for fields
 *              keygate never reads). check-request.ts reads the few fields it needs.
 *   response   a CheckResponse's `status` (OK, or a refusal's code and message) is
 *              encoded once per shape. An allowed answer's `ok_response` is written
 *              straight into one buffer: its headers (name and value as node writes
 *              strings), and the names to remove, encoded once per list. A refusal
 *              is `Type.encode` of the `denied_response` check-response.ts builds
 *              (enums as numbers), without proto-loader's `fromObject` copy.
 *
 * The bytes are the ones proto-loader's codec writes for the same answer, and a client
 * built with proto-loader (Envoy's definition, the tests') reads them unchanged.
 */
import type { ServiceDefinition } from '@grpc/proto-loader'
import protobuf from 'protobufjs'
import {
  authorizationService, envoyAuthRoot, type CheckRequest, type CheckResponse, type HeaderValueOption
} from './envoy-protos.js'

export interface CheckCodec {
  decode: (bytes: Buffer) => CheckRequest
  encode: (response: CheckResponse) => Buffer
}

let codec: CheckCodec | undefined

export function checkCodec (): CheckCodec {
  if (codec !== undefined) return codec
  const root = envoyAuthRoot()
  const request = root.lookupType('envoy.service.auth.v3.CheckRequest')
  const status = root.lookupType('google.rpc.Status')
  const denied = root.lookupType('envoy.service.auth.v3.DeniedHttpResponse')
  checkFieldNumbers(root)
  const statuses = new Map<string, Uint8Array>()
  const statusBytes = (s: CheckResponse['status']): Uint8Array => {
    const id = `${s.code}:${s.message ?? ''}`
    let bytes = statuses.get(id)
    if (bytes === undefined) {
      bytes = status.encode(s).finish()
      statuses.set(id, bytes)
    }
    return bytes
  }
  const removals = new WeakMap<readonly string[], Buffer>()
  const removalBytes = (names: readonly string[]): Buffer => {
    let bytes = removals.get(names)
    if (bytes === undefined) {
      bytes = Buffer.concat(names.map((name) => field(REMOVE_TAG, Buffer.from(name, 'utf8'))))
      removals.set(names, bytes)
    }
    return bytes
  }
  codec = {
    decode: (bytes) => request.decode(bytes) as unknown as CheckRequest,
    encode: (r) => {
      if (r.ok_response !== undefined && r.denied_response === undefined) {
        const { headers, headers_to_remove: remove, response_headers_to_add: add } = r.ok_response
        return okBytes(statusBytes(r.status), headers, removalBytes(remove), add)
      }
      const w = protobuf.Writer.create()
      w.uint32(STATUS_TAG).bytes(statusBytes(r.status))
      if (r.denied_response !== undefined) denied.encode(r.denied_response, w.uint32(DENIED_TAG).fork()).ldelim()
      if (r.ok_response !== undefined) throw new Error('CheckResponse: both ok_response and denied_response')
      return w.finish() as Buffer
    }
  }
  return codec
}

// tags (field number << 3 | wire type 2, length-delimited; 0 for the varint enum):
// CheckResponse status = 1, denied_response = 2, ok_response = 3; OkHttpResponse headers = 2,
// headers_to_remove = 5, response_headers_to_add = 6; HeaderValueOption header = 1,
// append_action = 3; HeaderValue key = 1, value = 2
const STATUS_TAG = 0x0a
const DENIED_TAG = 0x12
const OK_TAG = 0x1a
const HEADERS_TAG = 0x12
const REMOVE_TAG = 0x2a
const ADD_TAG = 0x32
const HEADER_TAG = 0x0a
const APPEND_ACTION_TAG = 0x18
const KEY_TAG = 0x0a
const VALUE_TAG = 0x12

/** the tags above, checked against the loaded definition once */
function checkFieldNumbers (root: protobuf.Root): void {
  const expect: Array<[string, string, number]> = [
    ['envoy.service.auth.v3.CheckResponse', 'status', 1], ['envoy.service.auth.v3.CheckResponse', 'denied_response', 2],
    ['envoy.service.auth.v3.CheckResponse', 'ok_response', 3], ['envoy.service.auth.v3.OkHttpResponse', 'headers', 2],
    ['envoy.service.auth.v3.OkHttpResponse', 'headers_to_remove', 5],
    ['envoy.service.auth.v3.OkHttpResponse', 'response_headers_to_add', 6],
    ['envoy.config.core.v3.HeaderValueOption', 'header', 1],
    ['envoy.config.core.v3.HeaderValueOption', 'append_action', 3],
    ['envoy.config.core.v3.HeaderValue', 'key', 1], ['envoy.config.core.v3.HeaderValue', 'value', 2]
  ]
  for (const [type, name, id] of expect) {
    if (root.lookupType(type).fields[name]?.id !== id) throw new Error(`${type}.${name}: not field ${id}`)
  }
}

const varintSize = (n: number): number => n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5

function writeVarint (buf: Buffer, at: number, n: number): number {
  while (n > 0x7f) {
    buf[at++] = (n & 0x7f) | 0x80
    n >>>= 7
  }
  buf[at++] = n
  return at
}

function field (tag: number, body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(1 + varintSize(body.length) + body.length)
  out.set(body, writeVarint(out, writeVarint(out, 0, tag), body.length))
  return out
}

/** key and value sizes, the HeaderValue's, and its HeaderValueOption's (the header, then append_action < 128) */
function optionSizes (h: HeaderValueOption): [number, number, number, number] {
  const k = Buffer.byteLength(h.header.key, 'utf8')
  const v = Buffer.byteLength(h.header.value, 'utf8')
  const value = 1 + varintSize(k) + k + 1 + varintSize(v) + v
  return [k, v, value, 1 + varintSize(value) + value + 2]
}

/** CheckResponse { status, ok_response { headers, headers_to_remove, response_headers_to_add } } */
function okBytes (
  status: Uint8Array, headers: HeaderValueOption[], remove: Buffer, add: HeaderValueOption[]
): Buffer {
  const sizes = [...headers, ...add].map(optionSizes)
  let okSize = remove.length
  for (const s of sizes) okSize += 1 + varintSize(s[3]) + s[3]
  const buf = Buffer.allocUnsafe(1 + varintSize(status.length) + status.length + 1 + varintSize(okSize) + okSize)
  let at = writeVarint(buf, writeVarint(buf, 0, STATUS_TAG), status.length)
  buf.set(status, at)
  at = writeVarint(buf, writeVarint(buf, at + status.length, OK_TAG), okSize)
  const options = (list: HeaderValueOption[], tag: number, from: number): void => {
    for (let i = 0; i < list.length; i++) {
      const h = list[i] as HeaderValueOption
      const [k, v, value, option] = sizes[from + i] as [number, number, number, number]
      at = writeVarint(buf, writeVarint(buf, at, tag), option)
      at = writeVarint(buf, writeVarint(buf, at, HEADER_TAG), value)
      at = writeVarint(buf, writeVarint(buf, at, KEY_TAG), k)
      at += buf.write(h.header.key, at, 'utf8')
      at = writeVarint(buf, writeVarint(buf, at, VALUE_TAG), v)
      at += buf.write(h.header.value, at, 'utf8')
      at = writeVarint(buf, writeVarint(buf, at, APPEND_ACTION_TAG), h.append_action)
    }
  }
  options(headers, HEADERS_TAG, 0)
  buf.set(remove, at)
  at += remove.length
  options(add, ADD_TAG, headers.length)
  if (at !== buf.length) throw new Error('CheckResponse: encoded size mismatch')
  return buf
}

/** Envoy's Authorization service with the Check method's codec above. */
export function leanAuthorizationService (): ServiceDefinition {
  const service = authorizationService()
  const { decode, encode } = checkCodec()
  return { ...service, Check: { ...service['Check'], requestDeserialize: decode, responseSerialize: encode } } as
    ServiceDefinition
}
