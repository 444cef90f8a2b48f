// Durations as written on the command line, in the file and in the admin API.
import t from 'tap'
import { DURATION, parseDuration } from '../../../src/config/duration.js'

t.test('parseDuration: `<n>s`, `<n>m`, `<n>h`, `<n>d`; anything else is not a duration', async (t) => {
  const rows: Array<[string, number | undefined]> = [
    ['1s', 1000],
    ['0s', 0],
    ['90s', 90_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['90d', 90 * 86_400_000],
    ['007s', 7000],
    ['999999999d', 999_999_999 * 86_400_000],
    [' 10s ', 10_000],
    ['1000000000s', undefined],
    ['', undefined],
    ['s', undefined],
    ['10', undefined],
    ['10ms', undefined],
    ['10S', undefined],
    ['10 s', undefined],
    ['1.5h', undefined],
    ['-1s', undefined],
    ['+1s', undefined],
    ['1w', undefined],
    ['1y', undefined],
    ['1h30m', undefined],
    ['0x10s', undefined],
    ['1e3s', undefined],
    ['\u0661s', undefined]
  ]
  for (const [text, ms] of rows) t.equal(parseDuration(text), ms, JSON.stringify(text))
})

t.test('DURATION, the schemas\' pattern, takes no surrounding space', async (t) => {
  t.ok(DURATION.test('10s'))
  t.notOk(DURATION.test(' 10s'))
  t.notOk(DURATION.test('10s\n'))
})
