// The quota grammar and the calendar (src/config/quota.ts): UTC days, weeks from Monday, months.
import t from 'tap'
import {
  MALFORMED, nextPeriodStart, parseQuota, periodStart, recordCredits, recordQuota, type QuotaPeriod
} from '../../../src/config/quota.js'

const at = (iso: string): number => Date.parse(iso)

t.test('parseQuota: <count>/<day|week|month>', async (t) => {
  t.same(parseQuota('500/day'), { count: 500, period: 'day', text: '500/day' })
  t.same(parseQuota('100000/month'), { count: 100000, period: 'month', text: '100000/month' })
  t.same(parseQuota('7/week'), { count: 7, period: 'week', text: '7/week' })
  for (const bad of ['0/day', '10/days', '10/1d', '-1/day', '10/Day', '10 /day', '1/year', '1000000000000/day', '']) {
    t.equal(parseQuota(bad), undefined, JSON.stringify(bad))
  }
  t.equal(recordQuota(undefined), undefined, 'absent: none')
  t.equal(recordQuota(''), undefined, 'empty: none')
  t.equal(recordQuota('ten/day'), MALFORMED, 'present but not a quota: malformed (allows nothing)')
})

t.test('recordCredits: a whole number', async (t) => {
  t.equal(recordCredits('0'), 0)
  t.equal(recordCredits('5000'), 5000)
  t.equal(recordCredits(null), undefined)
  for (const bad of ['-1', '1.5', '01', 'lots', '1e3']) t.equal(recordCredits(bad), MALFORMED, bad)
})

t.test('the period that holds a moment, and the next refill', async (t) => {
  const rows: Array<[QuotaPeriod, string, string, string]> = [
    ['day', '2026-11-29T02:37:00.000Z', '2026-11-29T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ['day', '2026-11-29T00:00:00.000Z', '2026-11-29T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ['day', '2026-11-29T23:59:59.999Z', '2026-11-29T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ['day', '2028-02-28T12:00:00.000Z', '2028-02-28T00:00:00.000Z', '2028-02-29T00:00:00.000Z'],
    // weeks start on Monday: 2026-11-29 is a Sunday, 2026-11-23 the Monday before
    ['week', '2026-11-29T23:59:59.999Z', '2026-11-23T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ['week', '2026-11-30T00:00:00.000Z', '2026-11-30T00:00:00.000Z', '2026-12-07T00:00:00.000Z'],
    ['week', '1970-01-01T00:00:00.000Z', '1969-12-29T00:00:00.000Z', '1970-01-05T00:00:00.000Z'],
    ['week', '2026-12-31T10:00:00.000Z', '2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z'],
    ['month', '2026-11-29T02:37:00.000Z', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    ['month', '2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['month', '2027-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z'],
    ['month', '2028-02-29T18:00:00.000Z', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
    ['month', '2027-02-15T00:00:00.000Z', '2027-02-01T00:00:00.000Z', '2027-03-01T00:00:00.000Z']
  ]
  for (const [period, now, start, next] of rows) {
    const s = periodStart(period, at(now))
    t.equal(new Date(s).toISOString(), start, `${period} of ${now} starts ${start}`)
    t.equal(new Date(nextPeriodStart(period, s)).toISOString(), next, `and refills ${next}`)
  }
})

t.test('every moment lies in its period: [start, next)', async (t) => {
  let bad = 0
  for (let ms = at('2024-01-01T00:00:00Z'); ms < at('2026-01-01T00:00:00Z'); ms += 3_599_999) {
    for (const period of ['day', 'week', 'month'] as const) {
      const s = periodStart(period, ms)
      if (!(s <= ms && ms < nextPeriodStart(period, s))) bad++
      if (new Date(s).getUTCHours() !== 0) bad++
      if (period === 'week' && new Date(s).getUTCDay() !== 1) bad++
      if (period === 'month' && new Date(s).getUTCDate() !== 1) bad++
    }
  }
  t.equal(bad, 0, 'two years, hour by hour: each in its period, which starts at midnight (a Monday, a 1st)')
})
