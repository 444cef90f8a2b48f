/**
 * keygate's answers as Envoy's CheckResponse:
 *
 *   allowed   status OK; `ok_response.headers`: the allowed answer's headers (identity
 *             headers, request id, trace context, assertion), each overwriting a
 *             client's copy; `headers_to_remove`: the key's headers and every identity
 *             header the answer does not set; `response_headers_to_add`: RateLimit-*
 *   refused   the status for the HTTP status (below), `denied_response`: that HTTP
 *             status, keygate's error object, its content type, request id,
 *             WWW-Authenticate, RateLimit-* and Retry-After
 *
 *   400 (and 431)  INVALID_ARGUMENT     401  UNAUTHENTICATED     403  PERMISSION_DENIED
 *   404            NOT_FOUND            429  RESOURCE_EXHAUSTED  503  UNAVAILABLE
 *   500            INTERNAL
 *
 * A refusal is always a CheckResponse, never an RPC error: Envoy applies
 * `failure_mode_allow` to an RPC that failed, so a registry outage answered as an RPC
 * error could let requests through. Answered as a response whose status is
 * UNAVAILABLE with a 503, it is a refusal whatever that setting says.
 */
import { status as grpcStatus } from '@grpc/grpc-js'
import type { AllowedAnswer } from '../authorizer/allowed-answer.js'
import { ERRORS, errorBody, JSON_CONTENT_TYPE, type ErrorCode } from '../errors.js'
import { OVERWRITE_IF_EXISTS_OR_ADD, type CheckResponse, type HeaderValueOption } from './envoy-protos.js'

const OK_STATUS = Object.freeze({ code: grpcStatus.OK })

/** The status of a CheckResponse refusing with an HTTP status. */
export function grpcCodeOf (httpStatus: number): number {
  switch (httpStatus) {
    case 400: case 413: case 417: case 431: return grpcStatus.INVALID_ARGUMENT
    case 401: return grpcStatus.UNAUTHENTICATED
    case 403: return grpcStatus.PERMISSION_DENIED
    case 404: return grpcStatus.NOT_FOUND
    case 429: return grpcStatus.RESOURCE_EXHAUSTED
    case 502: case 503: case 504: return grpcStatus.UNAVAILABLE
    default: return grpcStatus.INTERNAL
  }
}

function overwrite (headers: Record<string, string>): HeaderValueOption[] {
  const out: HeaderValueOption[] = []
  for (const key in headers) {
    out.push({ header: { key, value: headers[key] as string }, append_action: OVERWRITE_IF_EXISTS_OR_ADD })
  }
  return out
}

/** `rateLimit`: the RateLimit-* headers for the client's response, when a rate limit applies */
export function okResponse (answer: AllowedAnswer, rateLimit: Record<string, string> | undefined): CheckResponse {
  return {
    status: OK_STATUS,
    ok_response: {
      headers: overwrite(answer.headers),
      headers_to_remove: answer.remove.names as string[],
      response_headers_to_add: rateLimit === undefined ? [] : overwrite(rateLimit)
    }
  }
}

/**
 * `headers`: the refusal's own (WWW-Authenticate, RateLimit-*, Retry-After); the content
 * type and the request id are added here.
 */
export function deniedResponse (code: ErrorCode, requestId: string, headers: Record<string, string>): CheckResponse {
  const { status, message } = ERRORS[code]
  return {
    status: { code: grpcCodeOf(status), message },
    denied_response: {
      status: { code: status },
      headers: overwrite({ ...headers, 'content-type': JSON_CONTENT_TYPE, 'x-request-id': requestId }),
      body: errorBody(code)
    }
  }
}
