// Proves test/helpers/prom-text.ts accepts the Prometheus text format and rejects what
// the format forbids, so that the /metrics tests that rely on it can fail.
import t from 'tap'
import { parsePromText, parseSampleLine, PromParseError, valueOf } from './prom-text.js'

const GOOD = `# HELP a_total Things, with a \\\\ and a \\n in the help.
# TYPE a_total counter
a_total{rule="GET /x",reason="allowed"} 3
a_total{rule="say \\"hi\\"\\\\n",reason="x"} 1
# a comment
# HELP h Latency.
# TYPE h histogram
h_bucket{le="0.1",u="core"} 1
h_bucket{le="1",u="core"} 2
h_bucket{le="+Inf",u="core"} 3
h_sum{u="core"} 4.5
h_count{u="core"} 3
# TYPE g gauge
g -1.5e-3 1700000000000
g2 NaN
`

t.test('a well-formed exposition: families, types, help, labels with escapes, values', async (t) => {
  const f = parsePromText(GOOD)
  t.same([...f.keys()], ['a_total', 'h', 'g', 'g2'])
  t.equal(f.get('a_total')?.type, 'counter')
  t.equal(f.get('a_total')?.help, 'Things, with a \\ and a \n in the help.')
  t.equal(f.get('h')?.type, 'histogram')
  t.equal(f.get('h')?.samples.length, 5)
  t.equal(f.get('g2')?.type, 'untyped')
  t.equal(valueOf(f, 'a_total', { rule: 'GET /x', reason: 'allowed' }), 3)
  t.equal(valueOf(f, 'a_total', { rule: 'say "hi"\\n', reason: 'x' }), 1, 'label escapes \\" and \\\\ decoded')
  t.equal(valueOf(f, 'a_total', { rule: 'GET /x' }), undefined, 'labels must match exactly')
  t.equal(valueOf(f, 'h_count', { u: 'core' }), 3)
  t.equal(valueOf(f, 'g'), -0.0015)
  t.ok(Number.isNaN(valueOf(f, 'g2')))
})

t.test('sample lines: what the format allows', async (t) => {
  t.same(parseSampleLine('x 1').labels, {})
  t.same(parseSampleLine('x{} 1').labels, {})
  t.same(parseSampleLine('x{a="1",} 1').labels, { a: '1' }, 'a trailing comma')
  t.equal(parseSampleLine('x +Inf').value, Infinity)
  t.equal(parseSampleLine('x -inf').value, -Infinity)
  t.ok(Number.isNaN(parseSampleLine('x Nan').value), 'NaN in any case, as Prometheus reads it (prom-client writes Nan)')
  t.equal(parseSampleLine('x:y_z 2e3').value, 2000)
})

const BAD: Array<[string, string]> = [
  ['a metric name starting with a digit', '1x 1\n'],
  ['a label name with a dash', 'x{a-b="1"} 1\n'],
  ['an unquoted label value', 'x{a=1} 1\n'],
  ['an unterminated label value', 'x{a="1} 1\n'],
  ['an unknown escape', 'x{a="\\t"} 1\n'],
  ['a label given twice', 'x{a="1",a="2"} 1\n'],
  ['no value', 'x{a="1"}\n'],
  ['a word for a value', 'x one\n'],
  ['a fractional timestamp', 'x 1 1.5\n'],
  ['three fields', 'x 1 2 3\n'],
  ['no final newline', 'x 1'],
  ['TYPE twice', '# TYPE x counter\n# TYPE x counter\nx 1\n'],
  ['HELP twice', '# HELP x a\n# HELP x b\nx 1\n'],
  ['TYPE after a sample', 'x 1\n# TYPE x counter\n'],
  ['an unknown type', '# TYPE x meter\nx 1\n'],
  ['a series twice', 'x{a="1"} 1\nx{a="1"} 2\n'],
  ['a family split in two', '# TYPE x counter\nx{a="1"} 1\n# TYPE y gauge\ny 1\nx{a="2"} 1\n'],
  ['a histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
  ['a histogram whose buckets decrease', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="2"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n'],
  ['a histogram whose +Inf disagrees with _count', '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n'],
  ['a histogram without _sum', '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_count 1\n'],
  ['a histogram bucket without le', '# TYPE h histogram\nh_bucket 1\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n']
]

t.test('what the format forbids is refused, naming why', async (t) => {
  for (const [name, text] of BAD) {
    t.throws(() => parsePromText(text), PromParseError, name)
  }
})
