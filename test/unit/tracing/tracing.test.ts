/**
 * The sampling rule with nothing exported (src/tracing/tracing.ts): the sampled flag a
 * request's trace gets, by `tracing.sample_ratio` and `tracing.parent_based`.
 */
import t from 'tap'
import type { TracingConfig } from '../../../src/config/schema.js'
import { createTracing } from '../../../src/tracing/tracing.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'
const config = (o: Partial<TracingConfig>): TracingConfig => ({ sample_ratio: 1, parent_based: true, service_name: 'keygate', ...o })
const client = (flags: string): string[] => ['traceparent', `00-${TRACE}-${PARENT}-${flags}`]

t.test('the sampled flag of a trace, with nothing exported', async (t) => {
  const cases: Array<[string, Partial<TracingConfig>, string[], boolean]> = [
    ['ratio 1.0, a trace started here', { sample_ratio: 1 }, [], true],
    ['ratio 0, a trace started here', { sample_ratio: 0 }, [], false],
    ['parent-based: the client\'s sampled trace, whatever the ratio', { sample_ratio: 0 }, client('01'), true],
    ['parent-based: the client\'s unsampled trace, whatever the ratio', { sample_ratio: 1 }, client('00'), false],
    ['not parent-based: the ratio decides (0)', { sample_ratio: 0, parent_based: false }, client('01'), false],
    ['not parent-based: the ratio decides (1.0)', { sample_ratio: 1, parent_based: false }, client('00'), true]
  ]
  for (const [name, o, headers, sampled] of cases) {
    const trace = (await createTracing(config(o), 'kg_')).receive(headers)
    t.equal(trace.sampled, sampled, name)
    if (headers.length > 0) t.equal(trace.traceId, TRACE, `${name}: the client's trace id is kept`)
  }
})

t.test('a ratio between 0 and 1 samples about that share of new traces', async (t) => {
  const tracing = await createTracing(config({ sample_ratio: 0.25 }), 'kg_')
  let sampled = 0
  for (let i = 0; i < 4000; i++) if (tracing.receive([]).sampled) sampled++
  t.ok(sampled > 800 && sampled < 1200, `${sampled} of 4000 sampled`)
})

t.test('nothing exported: no span, and the gateway\'s own span id as the parent', async (t) => {
  const tracing = await createTracing(config({}), 'kg_')
  t.equal(tracing.exporting, false)
  t.equal(tracing.finisher('proxy'), undefined, 'no onResponse hook')
  const trace = tracing.receive(client('01'))
  t.equal(trace.span, undefined)
  const headers: Record<string, string | string[] | undefined> = {}
  tracing.toUpstream('core', 'http://127.0.0.1:3000')(trace, headers, 'GET')
  t.match(headers.traceparent, new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`))
  t.not(String(headers.traceparent).split('-')[2], PARENT)
  t.match(tracing.forwarded(trace), new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`))
})
