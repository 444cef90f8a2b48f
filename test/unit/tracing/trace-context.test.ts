/**
 * W3C Trace Context as a request brings it (src/tracing/trace-context.ts): which
 * `traceparent` headers are continued, which are replaced, and which `tracestate` lists
 * are forwarded.
 */
import t from 'tap'
import { clientTrace, newSpanId, newTraceId, traceparent, validTracestate } from '../../../src/tracing/trace-context.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'
const VALID = `00-${TRACE}-${PARENT}-01`

t.test('traceparent: continued or replaced', async (t) => {
  const cases: Array<[string, string[], { traceId: string, parentId: string, sampled: boolean } | undefined]> = [
    ['version 00, sampled', ['traceparent', VALID], { traceId: TRACE, parentId: PARENT, sampled: true }],
    ['version 00, not sampled', ['traceparent', `00-${TRACE}-${PARENT}-00`], { traceId: TRACE, parentId: PARENT, sampled: false }],
    ['only the sampled bit of the flags counts', ['traceparent', `00-${TRACE}-${PARENT}-03`], { traceId: TRACE, parentId: PARENT, sampled: true }],
    ['flags without the sampled bit', ['traceparent', `00-${TRACE}-${PARENT}-02`], { traceId: TRACE, parentId: PARENT, sampled: false }],
    ['the header name in any case', ['TraceParent', VALID], { traceId: TRACE, parentId: PARENT, sampled: true }],
    ['a higher version with more fields: its first four', ['traceparent', `cc-${TRACE}-${PARENT}-01-what-the-future-holds`], { traceId: TRACE, parentId: PARENT, sampled: true }],
    ['a higher version, exactly four fields', ['traceparent', `01-${TRACE}-${PARENT}-00`], { traceId: TRACE, parentId: PARENT, sampled: false }],
    ['absent', ['accept', '*/*'], undefined],
    ['version ff', ['traceparent', `ff-${TRACE}-${PARENT}-01`], undefined],
    ['version 00 with a fifth field', ['traceparent', `${VALID}-extra`], undefined],
    ['upper-case hex in the trace id', ['traceparent', `00-${TRACE.toUpperCase()}-${PARENT}-01`], undefined],
    ['upper-case hex in the parent id', ['traceparent', `00-${TRACE}-${PARENT.toUpperCase()}-01`], undefined],
    ['upper-case hex in the version', ['traceparent', `0A-${TRACE}-${PARENT}-01`], undefined],
    ['upper-case hex in the flags', ['traceparent', `00-${TRACE}-${PARENT}-0A`], undefined],
    ['all-zero trace id', ['traceparent', `00-${'0'.repeat(32)}-${PARENT}-01`], undefined],
    ['all-zero parent id', ['traceparent', `00-${TRACE}-${'0'.repeat(16)}-01`], undefined],
    ['a short trace id', ['traceparent', `00-${TRACE.slice(1)}-${PARENT}-01`], undefined],
    ['a long parent id', ['traceparent', `00-${TRACE}-${PARENT}0-01`], undefined],
    ['not hex', ['traceparent', `00-${TRACE.slice(0, 31)}g-${PARENT}-01`], undefined],
    ['another separator', ['traceparent', `00_${TRACE}_${PARENT}_01`], undefined],
    ['empty', ['traceparent', ''], undefined],
    ['two headers, even equal', ['traceparent', VALID, 'traceparent', VALID], undefined],
    ['two headers, one invalid', ['traceparent', VALID, 'Traceparent', 'garbage'], undefined]
  ]
  for (const [name, headers, expected] of cases) {
    const got = clientTrace(headers)
    t.same(got === undefined ? undefined : { traceId: got.traceId, parentId: got.parentId, sampled: got.sampled }, expected, name)
  }
})

t.test('tracestate: forwarded whole and valid, or not at all', async (t) => {
  const cases: Array<[string, string[], string | undefined]> = [
    ['one member', ['tracestate', 'congo=t61rcWkgMzE'], 'congo=t61rcWkgMzE'],
    ['two members, spaces around the comma', ['tracestate', 'rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE'], 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'],
    ['two headers: one list, in order', ['tracestate', 'rojo=1', 'TraceState', 'congo=2'], 'rojo=1,congo=2'],
    ['a multi-tenant key', ['tracestate', 'tenant@vendor=x'], 'tenant@vendor=x'],
    ['empty members are allowed', ['tracestate', 'rojo=1,,congo=2'], 'rojo=1,congo=2'],
    ['an invalid member drops the list', ['tracestate', 'rojo=1,Bad Key=2'], undefined],
    ['a member without `=`', ['tracestate', 'rojo=1,congo'], undefined],
    ['a repeated key drops the list', ['tracestate', 'rojo=1,rojo=2'], undefined],
    ['an upper-case key', ['tracestate', 'Rojo=1'], undefined],
    ['a value with `=`', ['tracestate', 'rojo=a=b'], undefined],
    ['33 members', ['tracestate', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')], undefined],
    ['over 512 characters', ['tracestate', Array.from({ length: 6 }, (_, i) => `k${i}=${'v'.repeat(100)}`).join(',')], undefined],
    ['only empty members', ['tracestate', ' , '], undefined]
  ]
  for (const [name, headers, expected] of cases) {
    t.equal(clientTrace(['traceparent', VALID, ...headers])?.tracestate, expected, name)
  }
  t.equal(clientTrace(['tracestate', 'rojo=1', 'traceparent', 'garbage']), undefined, 'no valid traceparent: no tracestate either')
  t.equal(validTracestate('a=1,b=2'), 'a=1,b=2')
})

t.test('fresh ids: lowercase hex of the right length, not all zeros, each different', async (t) => {
  const traces = new Set<string>()
  const spans = new Set<string>()
  // (more than the pool holds: it is refilled)
  for (let i = 0; i < 1000; i++) {
    traces.add(newTraceId())
    spans.add(newSpanId())
  }
  t.equal(traces.size, 1000, 'trace ids are unique')
  t.equal(spans.size, 1000, 'span ids are unique')
  for (const id of traces) if (!/^[0-9a-f]{32}$/.test(id) || /^0+$/.test(id)) t.fail(`bad trace id ${id}`)
  for (const id of spans) if (!/^[0-9a-f]{16}$/.test(id) || /^0+$/.test(id)) t.fail(`bad span id ${id}`)
  const made = traceparent(newTraceId(), newSpanId(), true)
  t.match(made, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
  t.ok(clientTrace(['traceparent', made]), 'what the gateway sends is a valid traceparent')
  t.match(traceparent(TRACE, PARENT, false), /-00$/, 'not sampled: flags 00')
})
