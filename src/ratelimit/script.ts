/**
 * Every bucket of one request checked, and counted, in one atomic Lua script, the
 * requests of one turn of the event loop together (registry/turn-batch.ts): one
 * round trip (EVALSHA through ioredis's defineCommand; EVAL once after a Redis restart
 * dropped the script cache). The steps are window.ts's, with Redis's `TIME` as the
 * clock, so every gateway reads the same clock.
 *
 * All or nothing: the request is counted in every bucket when every bucket allows it,
 * in none when one refuses (a refused request consumes nothing).
 *
 * A bucket (named in buckets.ts) is a hash: field `<slot index>` = requests allowed in
 * that slot, field `t<slot index>` = the latest one's time (ms); at most 11 slots,
 * expiring when its newest slot leaves the read (set once per slot, when the slot's
 * first request is counted). One call reads each bucket its asks name once (HGETALL, the
 * fields that no longer count deleted), checks and counts the asks one after another
 * against what it read, and writes each bucket that counted once, at the end (one HSET
 * of the current slot's count and time): asks on a shared bucket (a hot key, an org)
 * cost Redis a few microseconds each, not a read and two writes each. The period is in the name, so a changed count
 * keeps the bucket and a changed period starts a new one. On a Cluster the buckets
 * live in the registry's hash slot (the prefix's hash tag, docs/topologies.md), so
 * the script's keys never cross slots.
 */
import { isCluster, type RegistryClient } from '../registry/redis-client.js'
import { TurnBatch } from '../registry/turn-batch.js'
import type { RateLimit } from '../config/rate-limit.js'
import { SLOTS } from './window.js'

// KEYS: every ask's buckets, one ask after another. ARGV[1]: the clock in ms ('' = Redis
// TIME; tests only), ARGV[2]: the number of asks; per ask: its number of buckets, then count
// and period ms per bucket. Reply: per ask {allowed (0|1), used, reset ms, ...per bucket}.
const TAKE_LUA = `
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local S = ${SLOTS}
local _KEYS, _ARGV = KEYS, ARGV
-- the buckets this call has read, by name: read once, counted in by every ask, written once at the end
local buckets = {}
-- a bucket that counted requests: its slot's count and latest time, its expiry when the slot opened
local function flush (b)
  if not b.dirty then return end
  local field = string.format('%d', b.c)
  redis.call('HSET', b.key, field, string.format('%d', b.held[b.c]), 't' .. field, string.format('%d', now))
  if b.opened then redis.call('PEXPIRE', b.key, string.format('%d', (b.c + S + 1) * b.slot - now)) end
  b.dirty, b.opened = false, false
end
local function read (key, P)
  local b = buckets[key]
  if b ~= nil then
    if b.P == P then return b end
    flush(b)
  end
  local slot = P / S
  local flat = redis.call('HGETALL', key)
  local nums, times, names, old = {}, {}, {}, {}
  for j = 1, #flat, 2 do
    local f, v = flat[j], tonumber(flat[j + 1])
    local s
    if string.sub(f, 1, 1) == 't' then s = tonumber(string.sub(f, 2)) else s = tonumber(f) end
    if s == nil or v == nil then
      old[#old + 1] = f
    else
      names[#names + 1] = {s, f}
      if string.sub(f, 1, 1) == 't' then times[s] = v else nums[s] = (nums[s] or 0) + v end
    end
  end
  -- a slot counts while its latest request is inside the window (without its time,
  -- written by an older keygate: as if at the slot's end)
  local held, last, sum, gone = {}, {}, 0, {}
  for s, v in pairs(nums) do
    local t = times[s] or ((s + 1) * slot - 1)
    if t + P <= now then
      gone[s] = true
    else
      held[s], last[s] = v, t
      sum = sum + v
    end
  end
  for _, p in ipairs(names) do
    if gone[p[1]] or nums[p[1]] == nil then old[#old + 1] = p[2] end
  end
  if #old > 0 then redis.call('HDEL', key, unpack(old)) end
  b = {key = key, P = P, slot = slot, c = math.floor(now / slot), held = held, last = last, sum = sum,
    dirty = false, opened = false}
  buckets[key] = b
  return b
end
local dirty = {}
local function take (k0, n, a0)
local list, limits = {}, {}
local allowed = 1
for i = 1, n do
  local count = tonumber(_ARGV[a0 + 2 * i - 1])
  local b = read(_KEYS[k0 + i], tonumber(_ARGV[a0 + 2 * i]))
  if b.sum + 1 > count then allowed = 0 end
  list[i], limits[i] = b, count
end
local reply = {allowed}
for i = 1, n do
  local b, count = list[i], limits[i]
  local c, held, last, P = b.c, b.held, b.last, b.P
  if allowed == 1 then
    if held[c] == nil then b.opened = true end
    held[c] = (held[c] or 0) + 1
    last[c] = now
    b.sum = b.sum + 1
    if not b.dirty then b.dirty = true; dirty[#dirty + 1] = b end
  end
  local used = b.sum
  local need = math.max(1, used - count + 1)
  local reset = P
  local freed = 0
  for s = c - S, c do
    if held[s] ~= nil then
      freed = freed + held[s]
      if freed >= need then
        reset = math.max(1, last[s] + P - now)
        break
      end
    end
  end
  reply[#reply + 1] = used
  reply[#reply + 1] = reset
end
return reply
end
local out, ki, ai = {}, 0, 3
for r = 1, tonumber(_ARGV[2]) do
  local n = tonumber(_ARGV[ai])
  local ok, reply = pcall(take, ki, n, ai)
  if ok then out[r] = reply else out[r] = {err = tostring(reply)} end
  ki, ai = ki + n, ai + 1 + 2 * n
end
for _, b in ipairs(dirty) do flush(b) end
return out
`

export interface BucketResult {
  used: number
  resetMs: number
}

export interface TakeResult {
  allowed: boolean
  buckets: BucketResult[]
}

type Bucket = Readonly<{ name: string, limit: RateLimit }>

interface TakeCommand {
  keygateRateLimit: (numKeys: number, ...args: Array<string | number>) => Promise<Array<number[] | Error>>
}

/** asks one EVALSHA carries at most (Redis runs nothing else while a script runs) */
const BATCH_MAX = 128

export class RateLimitScript {
  private readonly batch: TurnBatch<readonly Bucket[], TakeResult>

  constructor (private readonly redis: RegistryClient) {
    redis.defineCommand('keygateRateLimit', { lua: TAKE_LUA })
    this.batch = new TurnBatch((asks) => this.send(asks, ''), BATCH_MAX, !isCluster(redis), 'rate limit')
  }

  /**
   * One request against `buckets` (Redis key and limit each), atomically: sent at once when no
   * call is waiting on Redis, else with the others of this turn of the event loop (registry/turn-batch.ts).
   * `nowMs`: tests only (sent alone).
   */
  async take (buckets: readonly Bucket[], nowMs?: number): Promise<TakeResult> {
    if (nowMs === undefined) return await this.batch.ask(buckets)
    const [reply] = await this.send([buckets], String(nowMs))
    if (reply === undefined || reply instanceof Error) throw reply ?? new Error('rate limit: no reply')
    return reply
  }

  private async send (
    asks: ReadonlyArray<readonly Bucket[]>, now: string
  ): Promise<Array<TakeResult | Error | undefined>> {
    const keys: string[] = []
    const argv: Array<string | number> = [now, asks.length]
    for (const buckets of asks) {
      argv.push(buckets.length)
      for (const b of buckets) {
        keys.push(b.name)
        argv.push(b.limit.count, b.limit.periodMs)
      }
    }
    const replies = await (this.redis as unknown as TakeCommand).keygateRateLimit(keys.length, ...keys, ...argv)
    return asks.map((buckets, i) => {
      const reply = replies[i]
      return reply === undefined || reply instanceof Error ? reply : resultOf(reply, buckets.length)
    })
  }
}

function resultOf (reply: readonly number[], n: number): TakeResult {
  const out: BucketResult[] = []
  for (let i = 0; i < n; i++) {
    out.push({ used: reply[1 + 2 * i] as number, resetMs: reply[2 + 2 * i] as number })
  }
  return { allowed: reply[0] === 1, buckets: out }
}
