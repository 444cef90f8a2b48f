import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { MALFORMED, parseRateLimit, RATE_LIMIT_PATTERN, recordLimit } from '../../../src/config/rate-limit.js'

t.test('parseRateLimit: <count>/<period>', async (t) => {
  const rows: Array<[string, number, number]> = [
    ['100/1s', 100, 1000],
    ['5000/1h', 5000, 3_600_000],
    ['20/10m', 20, 600_000],
    ['1/1d', 1, 86_400_000],
    ['999999999/9999d', 999_999_999, 9999 * 86_400_000]
  ]
  for (const [text, count, periodMs] of rows) t.same(parseRateLimit(text), { count, periodMs, text }, text)
  t.equal(parseRateLimit('100/1s'), parseRateLimit('100/1s'), 'parsed once, shared')
})

t.test('parseRateLimit: anything else is not a limit', async (t) => {
  for (const text of [
    '', '100', '/1s', '100/', '100/s', '100/1', '0/1s', '100/0s', '-1/1s', '1.5/1s', '100/1ms', '100/1w',
    ' 100/1s', '100/1s ', '100 /1s', '100/1S', '01/1s', '100/01s', '1000000000/1s', '100/10000s', '100/1s/1s', '１00/1s'
  ]) t.equal(parseRateLimit(text), undefined, JSON.stringify(text))
})

t.test('the schema pattern is the parser', async (t) => {
  const re = new RegExp(RATE_LIMIT_PATTERN)
  for (const text of ['100/1s', '5000/1h', '0/1s', '100/s', '100/1ms', 'x']) {
    t.equal(re.test(text), parseRateLimit(text) !== undefined, JSON.stringify(text))
  }
})

t.test('recordLimit: absent or empty is no limit; malformed allows nothing', async (t) => {
  t.equal(recordLimit(undefined), undefined)
  t.equal(recordLimit(''), undefined)
  t.same(recordLimit('3/1m'), { count: 3, periodMs: 60_000, text: '3/1m' })
  t.equal(recordLimit('3 per minute'), MALFORMED)
  t.equal(recordLimit('0/1s'), MALFORMED)
})

t.test('rate_limits in the configuration: validated by the same pattern, naming the field', async (t) => {
  const parse = (yaml: string): ReturnType<typeof parseConfig> => parseConfig(yaml, {}, 'test', { forServing: false })
  t.same(parse('rate_limits: { default: "100/1s" }\n').rate_limits, { default: '100/1s', on_error: 'allow' })
  t.same(parse('{}').rate_limits, { on_error: 'allow' }, 'no default, on_error allow')
  t.throws(() => parse('rate_limits: { default: "100 per second" }\n'), { name: 'ConfigError', message: /rate_limits.default/ })
  t.throws(() => parse('rate_limits: { on_error: block }\n'), { name: 'ConfigError', message: /rate_limits.on_error/ })
})
