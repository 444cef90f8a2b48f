/**
 * The meter's script (src/quota/script.ts) on a real redis-server: the asks of one call
 * are checked and spent one after another, each as if alone, all or nothing across its
 * allowances; the call reads each meter and each record's credits once, and writes each
 * meter that was spent from once; an ask whose meter Redis cannot add to fails alone.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { QuotaScript, type MeterAsk, type MeterRow } from '../../../src/quota/script.js'
import { commandCalls, startPrivateRedis, uniquePrefix } from '../../helpers/redis.js'

t.test('a call reads each meter once and writes each once; every ask as if alone, all or nothing', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const script = new QuotaScript(client)
  const prefix = uniquePrefix()
  const periodStart = Date.parse('2026-11-01T00:00:00Z')
  const org = `${prefix}org:acme`
  // the org's credits: 100 granted, 95 spent
  await client.hset(org, 'credits', '100')
  await client.hset(`${prefix}meter:org:acme`, 'spent', '95')
  const keyRow = (k: string, count: number): MeterRow =>
    ({ meter: `${prefix}meter:key:${k}`, record: `${prefix}key:${k}`, quota: { count, periodStart }, credits: false })
  const orgRow: MeterRow = { meter: `${prefix}meter:org:acme`, record: org, credits: true }
  const ask = (k: string): MeterAsk => ({ need: 1, debit: 1, rows: [k === 'k1' ? keyRow('k1', 3) : keyRow('k2', 10), orgRow] })
  // a meter whose `spent` Redis cannot add to
  const broken = `${prefix}meter:org:broken`
  await client.hset(broken, 'spent', 'x')
  await script.ask({ need: 0, debit: 0, rows: [] }) // the script loaded
  const before = await commandCalls(client)

  // the first ask goes alone (nothing waits on Redis), the other 8 of the turn in one call
  const keys = ['k1', 'k1', 'k1', 'k1', 'k2', 'k1', 'k2', 'k2']
  const asks = keys.map(async (k) => await script.ask(ask(k)))
  const failing = script.ask({ need: 1, debit: 1, rows: [{ meter: broken, record: org, credits: true }] })
  const answers = await Promise.all(asks)
  await t.rejects(failing, /not an integer/, 'an ask whose meter Redis cannot add to fails, alone')
  const after = await commandCalls(client)
  const delta = (name: string): number => (after[name] ?? 0) - (before[name] ?? 0)

  t.same(answers.map((a) => a.allowed), [true, true, true, false, true, false, true, false],
    'in order: k1\'s quota of 3, then the org\'s 5 credits left run out')
  t.same(answers.map((a) => a.rows[0]?.quotaLeft), [2, 1, 0, 0, 9, 0, 8, 8], 'each ask saw the spending of those before it')
  t.same(answers.map((a) => a.rows[1]?.creditsLeft), [4, 3, 2, 2, 1, 1, 0, 0], 'refused asks spent nothing')
  t.equal(delta('evalsha') + delta('eval'), 2, 'two calls: the first ask alone, then the turn\'s 8')
  t.equal(delta('hmget'), 2 + 4, 'each call read each of its meters once (2, then k1, k2, org, broken)')
  t.equal(delta('hget'), 1 + 1, 'and each record\'s credits once')
  t.equal(delta('hset'), 1 + 2, 'and wrote each quota once (k1, then k1 and k2)')
  t.equal(delta('hincrby'), 1 + 1, 'and each credits meter once (the org\'s)')
  t.same(await client.hgetall(`${prefix}meter:key:k1`), { period: String(periodStart), used: '3' })
  t.same(await client.hgetall(`${prefix}meter:key:k2`), { period: String(periodStart), used: '2' })
  t.same(await client.hgetall(`${prefix}meter:org:acme`), { spent: '100' }, 'the org spent all its credits, no more')
  t.same(await client.hgetall(broken), { spent: 'x' }, 'the broken meter untouched')
})
