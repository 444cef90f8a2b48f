/**
 * The allowance of metered requests, checked and spent in Redis, atomically: one Lua
 * script. Asks made in the same turn of the event loop (every metered request that
 * arrived together) go out together when the turn ends (setImmediate), as one EVALSHA
 * of up to BATCH_MAX asks, like the registry's reads (registry-reader.ts): one round
 * trip and one command for ioredis to encode and parse, however many requests are
 * waiting. Redis runs a script alone, so the asks of every gateway are applied one
 * after another: no two can spend the same unit.
 *
 * Each ask is all or nothing: it spends `debit` units of every allowance (row) when each
 * has at least `need` left, none otherwise (`need` 0: always; a debit after the response;
 * a negative debit gives back what a request refused after its decision had spent).
 * One call reads each meter (HMGET) and each record's credits its asks name once, checks
 * and spends the asks one after another against what it read, and writes each meter that
 * was spent from once, at the end: asks on one meter (a busy key, an org) share the read
 * and the write.
 *
 * A meter (docs/quotas.md) is a hash, no expiry: `period` (the start, epoch ms, of the
 * period `used` counts), `used` (units of the quota spent in it), `spent` (credits spent
 * in all). The quota is refilled lazily: an ask in a later period than the one stored
 * counts from 0, and the first spend stores the new period. A stored period later than
 * the asker's (a gateway whose clock is behind) is kept, so a count never goes back. The
 * credits granted are read from the record itself (`credits` of the key or org record),
 * so an admin's addition applies to the very next ask on every gateway. On a Cluster
 * the meters live in the registry's hash slot (the prefix's hash tag), as the records do.
 */
import { isCluster, type RegistryClient } from '../registry/redis-client.js'
import { TurnBatch } from '../registry/turn-batch.js'

// KEYS: per row, its meter hash and its record. ARGV[1]: the number of asks; per ask:
// need, debit, rows; per row: quota count ('' = none), period start ms, '1' when credits apply.
// Reply: per ask {allowed (0|1), per row: quota left, period start, credits granted, credits left ('' = none)}.
const METER_LUA = `
-- the meters and records this call has read, by name: read once, spent from by every ask, written once at the end
local meters, credits, dirty = {}, {}, {}
local function meterOf (mk)
  local m = meters[mk]
  if m == nil then
    local st = redis.call('HMGET', mk, 'period', 'used', 'spent')
    m = {key = mk, period = tonumber(st[1]), used = tonumber(st[2]), spent = tonumber(st[3]), spend = 0, set = false}
    -- a spent count Redis cannot add to: an ask that would spend from it fails, as HINCRBY would
    m.broken = st[3] and (m.spent == nil or m.spent ~= math.floor(m.spent))
    meters[mk] = m
  end
  return m
end
local function creditsOf (rk)
  local c = credits[rk]
  if c == nil then
    c = tonumber(redis.call('HGET', rk, 'credits')) or 0
    credits[rk] = c
  end
  return c
end
local function ask (ai, ki)
  local need, debit, m = tonumber(ARGV[ai]), tonumber(ARGV[ai + 1]), tonumber(ARGV[ai + 2])
  ai = ai + 3
  local rows, ok = {}, 1
  for j = 1, m do
    local mk, rk = KEYS[ki], KEYS[ki + 1]
    ki = ki + 2
    local q, p, c = ARGV[ai], ARGV[ai + 1], ARGV[ai + 2]
    ai = ai + 3
    local st = meterOf(mk)
    local row = {m = st}
    if q ~= '' then
      local period, stored, used = tonumber(p), st.period, 0
      if stored ~= nil and stored >= period then
        period = stored
        used = st.used or 0
      end
      row.period, row.used, row.qleft = period, used, tonumber(q) - used
      if need > 0 and row.qleft < need then ok = 0 end
    end
    if c ~= '' then
      local granted = creditsOf(rk)
      row.granted, row.cleft = granted, granted - (st.spent or 0)
      if need > 0 and row.cleft < need then ok = 0 end
    end
    rows[j] = row
  end
  if ok == 1 and debit ~= 0 then
    for j = 1, m do
      if rows[j].cleft ~= nil and rows[j].m.broken then error('ERR hash value is not an integer') end
    end
    for j = 1, m do
      local row = rows[j]
      local st = row.m
      if row.qleft ~= nil then
        st.period, st.used, st.set = row.period, math.max(0, row.used + debit), true
        row.qleft = row.qleft - debit
      end
      if row.cleft ~= nil then
        st.spend = st.spend + debit
        st.spent = (st.spent or 0) + debit
        row.cleft = row.cleft - debit
      end
      if not st.dirty then st.dirty = true; dirty[#dirty + 1] = st end
    end
  end
  local reply = {ok}
  for j = 1, m do
    local row = rows[j]
    reply[#reply + 1] = row.qleft and string.format('%d', row.qleft) or ''
    reply[#reply + 1] = row.period and string.format('%d', row.period) or ''
    reply[#reply + 1] = row.granted and string.format('%d', row.granted) or ''
    reply[#reply + 1] = row.cleft and string.format('%d', row.cleft) or ''
  end
  return reply
end
local out, ai, ki = {}, 2, 1
for r = 1, tonumber(ARGV[1]) do
  local m = tonumber(ARGV[ai + 2])
  local ok, reply = pcall(ask, ai, ki)
  if ok then out[r] = reply else out[r] = {err = tostring(reply)} end
  ai, ki = ai + 3 + 3 * m, ki + 2 * m
end
for _, st in ipairs(dirty) do
  if st.set then
    redis.call('HSET', st.key, 'period', string.format('%d', st.period), 'used', string.format('%d', st.used))
  end
  if st.spend ~= 0 then redis.call('HINCRBY', st.key, 'spent', st.spend) end
end
return out
`

/** asks one EVALSHA carries at most (Redis runs nothing else while a script runs) */
const BATCH_MAX = 128

/** One allowance an ask needs: a meter hash, the record it belongs to, its quota and period, its credits. */
export interface MeterRow {
  meter: string
  record: string
  /** the quota's count and the start of the current period (epoch ms); undefined: no quota */
  quota?: { count: number, periodStart: number } | undefined
  /** the record's credits apply */
  credits: boolean
}

export interface MeterAsk {
  /** units every row must have left (0: none needed) */
  need: number
  /** units spent of every row when the ask is allowed */
  debit: number
  rows: readonly MeterRow[]
}

export interface RowAnswer {
  /** the quota's units left (after the debit) and its period's start; undefined: no quota */
  quotaLeft?: number
  periodStart?: number
  /** the credits granted in all and left (after the debit); undefined: no credits */
  granted?: number
  creditsLeft?: number
}

export interface MeterAnswer {
  allowed: boolean
  rows: RowAnswer[]
}

interface MeterCommand {
  keygateMeter: (numKeys: number, ...args: Array<string | number>) => Promise<Array<string[] | Error>>
}

export class QuotaScript {
  private readonly batch: TurnBatch<MeterAsk, MeterAnswer>

  constructor (private readonly redis: RegistryClient) {
    redis.defineCommand('keygateMeter', { lua: METER_LUA })
    this.batch = new TurnBatch((asks) => this.sendAsks(asks), BATCH_MAX, !isCluster(redis), 'quota')
  }

  /**
   * One ask: sent at once when no call is waiting on Redis (a lone request pays no
   * delay), else with the others of this turn of the event loop.
   */
  async ask (a: MeterAsk): Promise<MeterAnswer> {
    return await this.batch.ask(a)
  }

  private async sendAsks (asks: readonly MeterAsk[]): Promise<Array<MeterAnswer | Error | undefined>> {
    const keys: string[] = []
    const argv: Array<string | number> = [asks.length]
    for (const a of asks) {
      argv.push(a.need, a.debit, a.rows.length)
      for (const r of a.rows) {
        keys.push(r.meter, r.record)
        argv.push(r.quota?.count ?? '', r.quota?.periodStart ?? '', r.credits ? '1' : '')
      }
    }
    const replies = await (this.redis as unknown as MeterCommand).keygateMeter(keys.length, ...keys, ...argv)
    return asks.map((a, i) => {
      const reply = replies[i]
      return reply === undefined || reply instanceof Error ? reply : answerOf(reply, a)
    })
  }
}

function answerOf (reply: ReadonlyArray<string | number>, a: MeterAsk): MeterAnswer {
  const rows: RowAnswer[] = []
  for (let j = 0; j < a.rows.length; j++) {
    const row: RowAnswer = {}
    const [qleft, period, granted, cleft] = [1, 2, 3, 4].map((k) => reply[4 * j + k])
    if (qleft !== '' && qleft !== undefined) {
      row.quotaLeft = Number(qleft)
      row.periodStart = Number(period)
    }
    if (granted !== '' && granted !== undefined) {
      row.granted = Number(granted)
      row.creditsLeft = Number(cleft)
    }
    rows.push(row)
  }
  return { allowed: reply[0] === 1, rows }
}
