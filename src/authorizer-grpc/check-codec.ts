/**
 * The Check method's wire codec, in place of @grpc/proto-loader's for this one method:
 *
 *   request    protobufjs's `Type.decode` of the CheckRequest, read as decoded: no
 *              conversion of the whole message to a plain object (proto-loader's
 *              `toObject` with 64-bit integers as strings and enums as names, for fields
 *              keygate never reads). check-request.ts reads the few fields it needs.
 *   response   `Type.encode` of the CheckResponse as check-response.ts builds it (enums
 *              as numbers), without proto-loader's `fromObject` copy; a CheckResponse's
 *              `status` (OK, or a refusal's code and message) is encoded once per shape.
 *
 * The bytes are the ones proto-loader's codec writes for the same answer, and a client
 * built with proto-loader (Envoy's definition, the tests') reads them unchanged.
 */
import type { ServiceDefinition } from '@grpc/proto-loader'
import protobuf from 'protobufjs'
import { authorizationService, envoyAuthRoot, type CheckRequest, type CheckResponse } from './envoy-protos.js'

export interface CheckCodec {
  decode: (bytes: Buffer) => CheckRequest
  encode: (response: CheckResponse) => Buffer
}

let codec: CheckCodec | undefined

export function checkCodec (): CheckCodec {
  if (codec !== undefined) return codec
  const root = envoyAuthRoot()
  const request = root.lookupType('envoy.service.auth.v3.CheckRequest')
  const response = root.lookupType('envoy.service.auth.v3.CheckResponse')
  const status = root.lookupType('google.rpc.Status')
  const ok = root.lookupType('envoy.service.auth.v3.OkHttpResponse')
  const denied = root.lookupType('envoy.service.auth.v3.DeniedHttpResponse')
  // CheckResponse: status = 1, denied_response = 2, ok_response = 3 (length-delimited)
  const STATUS_TAG = (1 << 3) | 2
  const DENIED_TAG = (2 << 3) | 2
  const OK_TAG = (3 << 3) | 2
  if (response.fields['status']?.id !== 1 || response.fields['denied_response']?.id !== 2 ||
    response.fields['ok_response']?.id !== 3) throw new Error('CheckResponse: unexpected field numbers')
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
  codec = {
    decode: (bytes) => request.decode(bytes) as unknown as CheckRequest,
    encode: (r) => {
      const w = protobuf.Writer.create()
      w.uint32(STATUS_TAG).bytes(statusBytes(r.status))
      if (r.denied_response !== undefined) denied.encode(r.denied_response, w.uint32(DENIED_TAG).fork()).ldelim()
      if (r.ok_response !== undefined) ok.encode(r.ok_response, w.uint32(OK_TAG).fork()).ldelim()
      return w.finish() as Buffer
    }
  }
  return codec
}

/** Envoy's Authorization service with the Check method's codec above. */
export function leanAuthorizationService (): ServiceDefinition {
  const service = authorizationService()
  const { decode, encode } = checkCodec()
  return { ...service, Check: { ...service['Check'], requestDeserialize: decode, responseSerialize: encode } } as
    ServiceDefinition
}
