// The quota stage and its verdicts, without Redis: the script's answers stand in for Redis's
// (src/quota/script.ts is tested against a real Redis in test/integration/quota/).
import t from 'tap'
import { recordMeter, type RecordMeter } from '../../../src/registry/records.js'
import { createQuotaMeter, type QuotaVerdict } from '../../../src/quota/meter.js'
import { quotaHeaders } from '../../../src/quota/respond.js'
import type { MeterAnswer, MeterAsk, QuotaScript } from '../../../src/quota/script.js'
import { quota } from '../../../src/decision/stages/quota.js'
import type { Passing } from '../../../src/decision/verdict.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import type { CompiledRule } from '../../../src/decision/match-rule.js'
import { NO_GRANTS } from '../../../src/registry/records.js'

const NOW = Date.parse('2026-11-29T02:37:00Z')
const DAY_START = Date.parse('2026-11-29T00:00:00Z')
const outcomes: string[] = []

/** a script that answers what it is told, and remembers the asks */
function scripted (answer: (a: MeterAsk) => MeterAnswer | Error): { script: QuotaScript, asks: MeterAsk[] } {
  const asks: MeterAsk[] = []
  const script = {
    ask: async (a: MeterAsk) => {
      asks.push(a)
      const r = answer(a)
      if (r instanceof Error) throw r
      return r
    }
  } as unknown as QuotaScript
  return { script, asks }
}

function meter (answer: (a: MeterAsk) => MeterAnswer | Error, onError: 'allow' | 'deny' = 'deny'): { check: ReturnType<typeof quota.build>, asks: MeterAsk[] } {
  const { script, asks } = scripted(answer)
  const m = createQuotaMeter({ script, keys: redisKeys('kg:'), metrics: { outcome: (o) => { outcomes.push(o) } }, onError })
  return { check: quota.build({ matchRule: () => null, limiter: undefined, quota: m }), asks }
}

function passing (keyMeter?: RecordMeter, orgMeter?: RecordMeter, cost: number | 'upstream' = 1): Passing {
  const rule = { index: 0, method: 'GET', path: '/a', permissions: [], scope: '', orgParam: undefined, public: false, cost, defaultCost: 1 } as CompiledRule
  return {
    ok: true,
    identity: { keyId: 'k1', type: 'bot', userId: undefined, org: 'acme', role: 'r', grants: NO_GRANTS, keyMeter, orgMeter },
    rule,
    route: undefined
  }
}

t.test('a key without an allowance: synchronous, nothing asked', async (t) => {
  const { check, asks } = meter(() => { throw new Error('not asked') })
  const p = passing()
  t.equal(check(p, 'GET', '/a', undefined, NOW), undefined)
  t.equal(asks.length, 0)
  t.equal(p.quota, undefined)
})

t.test('a malformed quota allows nothing, without Redis', async (t) => {
  const { check, asks } = meter(() => { throw new Error('not asked') })
  const v = check(passing(recordMeter('lots/day', undefined)), 'GET', '/a', undefined, NOW)
  t.match(v, { ok: false, code: 'quota_exceeded', reason: 'invalid_record' })
  t.equal(asks.length, 0)
})

t.test('allowed: the ask names both meters, the verdict carries the allowances', async (t) => {
  const { check, asks } = meter(() => ({ allowed: true, rows: [{ quotaLeft: 9, periodStart: DAY_START }, { granted: 100, creditsLeft: 40 }] }))
  const p = passing(recordMeter('10/day', undefined), recordMeter(undefined, '100'), 1)
  t.equal(await check(p, 'GET', '/a', undefined, NOW), undefined, 'let on')
  t.same(asks[0], {
    need: 1,
    debit: 1,
    rows: [
      { meter: 'kg:meter:key:k1', record: 'kg:key:k1', quota: { count: 10, periodStart: DAY_START }, credits: false },
      { meter: 'kg:meter:org:acme', record: 'kg:org:acme', quota: undefined, credits: true }
    ]
  })
  const headers = quotaHeaders(p.quota)
  t.same(headers, {
    'ratelimit-policy': '"key-quota";q=10;w=86400, "org-credits";q=100',
    ratelimit: `"key-quota";r=9;t=${Math.ceil((DAY_START + 86_400_000 - NOW) / 1000)}, "org-credits";r=40`
  })
})

t.test('a rotated key spends the meter of the key it continues', async (t) => {
  const { check, asks } = meter(() => ({ allowed: true, rows: [{ quotaLeft: 1, periodStart: DAY_START }] }))
  await check(passing(recordMeter('10/day', undefined, 'k0')), 'GET', '/a', undefined, NOW)
  t.equal(asks[0]?.rows[0]?.meter, 'kg:meter:key:k0')
  t.equal(asks[0]?.rows[0]?.record, 'kg:key:k1', 'its own record (its credits)')
})

t.test('costs: a fixed cost is needed and spent; 0 needs nothing; upstream needs 1 and spends nothing yet', async (t) => {
  for (const [cost, need, debit] of [[3, 3, 3], [0, 0, 0], ['upstream', 1, 0]] as const) {
    const { check, asks } = meter(() => ({ allowed: true, rows: [{ quotaLeft: 5, periodStart: DAY_START }] }))
    await check(passing(recordMeter('10/day', undefined), undefined, cost), 'GET', '/a', undefined, NOW)
    t.match(asks[0], { need, debit }, `cost ${cost}`)
  }
})

t.test('refused: 429 quota_exceeded, Retry-After to the refill; none when credits ran out', async (t) => {
  const q = meter(() => ({ allowed: false, rows: [{ quotaLeft: 0, periodStart: DAY_START }] }))
  const v = await q.check(passing(recordMeter('10/day', undefined)), 'GET', '/a', undefined, NOW)
  const refill = Math.ceil((DAY_START + 86_400_000 - NOW) / 1000)
  t.match(v, { ok: false, code: 'quota_exceeded', reason: 'quota_exceeded' })
  t.equal(quotaHeaders((v as { quota: QuotaVerdict }).quota)?.['retry-after'], String(refill))

  const c = meter(() => ({ allowed: false, rows: [{ quotaLeft: 3, periodStart: DAY_START, granted: 5, creditsLeft: 0 }] }))
  const w = await c.check(passing(recordMeter('10/day', '5')), 'GET', '/a', undefined, NOW)
  const headers = quotaHeaders((w as { quota: QuotaVerdict }).quota)
  t.equal(headers?.['retry-after'], undefined, 'credits have no refill')
  t.equal(headers?.ratelimit, `"key-quota";r=3;t=${refill}, "key-credits";r=0`)
})

t.test('an overdrawn balance shows 0 left, never a negative number', async (t) => {
  const q = meter(() => ({ allowed: false, rows: [{ granted: 5, creditsLeft: -7 }] }))
  const v = await q.check(passing(recordMeter(undefined, '5')), 'GET', '/a', undefined, NOW)
  t.equal(quotaHeaders((v as { quota: QuotaVerdict }).quota)?.ratelimit, '"key-credits";r=0')
})

t.test('Redis unreachable: on_error deny is 503 quota_unavailable; allow lets the request on', async (t) => {
  const deny = meter(() => new Error('Connection is closed.'), 'deny')
  t.match(await deny.check(passing(recordMeter('10/day', undefined)), 'GET', '/a', undefined, NOW), { ok: false, code: 'service_unavailable', reason: 'quota_unavailable' })
  const allow = meter(() => new Error('Connection is closed.'), 'allow')
  const p = passing(recordMeter('10/day', undefined))
  t.equal(await allow.check(p, 'GET', '/a', undefined, NOW), undefined)
  t.equal(p.quota, undefined, 'no headers: nothing could be read')
  t.ok(outcomes.includes('error_denied') && outcomes.includes('error_allowed'), 'both counted')
})
