/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as a request brings it: the
 * client's `traceparent` and `tracestate`, read from the raw headers, and fresh ids for
 * a trace that starts at the gateway. Parsing and validation are @opentelemetry/core's:
 *
 * - `traceparent`: exactly one header (two are invalid); lowercase hex; a trace id and a
 *   parent id that are not all zeros; version `ff` is invalid; version `00` is exactly
 *   55 characters; a higher version is read by its first four fields (the spec's
 *   forward compatibility). Only the `sampled` bit of the flags is kept.
 * - `tracestate`: kept only with a valid `traceparent`; several headers are one list
 *   (combined with `,`); every non-empty member must be a valid `key=value`, keys
 *   distinct, at most 32 members and 512 characters, or the whole list is dropped.
 *   Forwarded as one normalised header.
 *
 * Ids are slices of the hex of one pooled buffer that `crypto.randomFillSync` refills
 * (an id costs a string slice, not a system call).
 */
// (the two modules, not the package's index: the index also loads its SDK-info module and with
// it @opentelemetry/semantic-conventions, ~3 MB of RSS for a gateway that exports no spans)
import { TraceState } from '@opentelemetry/core/build/src/trace/TraceState.js'
import { parseTraceParent } from '@opentelemetry/core/build/src/trace/W3CTraceContextPropagator.js'
import { randomFillSync } from 'node:crypto'

export interface ClientTrace {
  traceId: string
  /** the client's span, the parent of the gateway's */
  parentId: string
  sampled: boolean
  /** the client's `tracestate`, validated and normalised; undefined: absent or invalid */
  tracestate: string | undefined
}

/** The longest `tracestate` list kept (the spec's bound for propagation), and its members. */
const TRACESTATE_CHARS = 512
const TRACESTATE_MEMBERS = 32

/** The client's trace context, or undefined when it sent no valid `traceparent`. */
export function clientTrace (rawHeaders: readonly string[]): ClientTrace | undefined {
  let parent: string | undefined
  let parents = 0
  let state: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    // (cheap first: only names of the right length whose first letter is `t`)
    if ((name.length !== 11 && name.length !== 10) || (name.charCodeAt(0) | 0x20) !== 0x74) continue
    const lower = name.toLowerCase()
    const value = rawHeaders[i + 1] as string
    if (lower === 'traceparent') {
      parents++
      parent = value
    } else if (lower === 'tracestate') {
      state = state === undefined ? value : state + ',' + value
    }
  }
  if (parents !== 1 || parent === undefined) return undefined
  const parsed = parseTraceParent(parent)
  if (parsed === null) return undefined
  return {
    traceId: parsed.traceId,
    parentId: parsed.spanId,
    sampled: (parsed.traceFlags & 1) === 1,
    tracestate: state === undefined ? undefined : validTracestate(state)
  }
}

/** A `tracestate` list as forwarded, or undefined when any of it is invalid (see above). */
export function validTracestate (raw: string): string | undefined {
  if (raw.length > 8 * TRACESTATE_CHARS) return undefined
  let members = 0
  for (const member of raw.split(',')) if (member.trim() !== '') members++
  if (members === 0 || members > TRACESTATE_MEMBERS) return undefined
  // TraceState drops each invalid member, a repeated key, and what passes 512 characters
  const kept = new TraceState(raw).serialize()
  if (kept === '' || kept.split(',').length !== members) return undefined
  return kept
}

/** `traceparent` version 00 for a trace, a parent span and a sampling decision. */
export function traceparent (traceId: string, spanId: string, sampled: boolean): string {
  return (sampled ? '00-' + traceId + '-' + spanId + '-01' : '00-' + traceId + '-' + spanId + '-00')
}

// 4 KiB of randomness at a time, as hex: an id is a slice of the string (encoding 16
// bytes as hex one id at a time costs ~10x the slice)
const POOL_BYTES = 4096
const pool = Buffer.allocUnsafeSlow(POOL_BYTES)
let hexPool = ''
let used = POOL_BYTES * 2

function randomHex (bytes: number): string {
  const chars = bytes * 2
  if (used + chars > hexPool.length) {
    randomFillSync(pool)
    hexPool = pool.toString('hex')
    used = 0
  }
  const hex = hexPool.slice(used, used + chars)
  used += chars
  return hex
}

const ZERO_TRACE_ID = '0'.repeat(32)
const ZERO_SPAN_ID = '0'.repeat(16)

/** A random trace id: 32 lowercase hex digits, never all zeros. */
export function newTraceId (): string {
  let id = randomHex(16)
  while (id === ZERO_TRACE_ID) id = randomHex(16)
  return id
}

/** A random span id: 16 lowercase hex digits, never all zeros. */
export function newSpanId (): string {
  let id = randomHex(8)
  while (id === ZERO_SPAN_ID) id = randomHex(8)
  return id
}
