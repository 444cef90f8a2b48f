/**
 * Every bucket of one request checked, and counted, in one atomic Lua script: one
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
 * first request is counted). The period is in the name, so a changed count
 * keeps the bucket and a changed period starts a new one. On a Cluster the buckets
 * live in the registry's hash slot (the prefix's hash tag, docs/topologies.md), so
 * the script's keys never cross slots.
 */
import type { RegistryClient } from '../registry/redis-client.js'
import type { RateLimit } from '../config/rate-limit.js'
import { SLOTS } from './window.js'

// KEYS: the buckets. ARGV[1]: the clock in ms ('' = Redis TIME; tests only), then
// count and period ms per bucket. Reply: {allowed (0|1), used, reset ms, ...per bucket}.
const TAKE_LUA = `
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local S = ${SLOTS}
local n = #KEYS
local counts, lasts, sums, cur, len, periods = {}, {}, {}, {}, {}, {}
local allowed = 1
for i = 1, n do
  local count = tonumber(ARGV[2 * i])
  local P = tonumber(ARGV[2 * i + 1])
  local slot = P / S
  local c = math.floor(now / slot)
  local flat = redis.call('HGETALL', KEYS[i])
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
  if #old > 0 then redis.call('HDEL', KEYS[i], unpack(old)) end
  if sum + 1 > count then allowed = 0 end
  counts[i], lasts[i], sums[i], cur[i], len[i], periods[i] = held, last, sum, c, slot, P
end
local reply = {allowed}
for i = 1, n do
  local count = tonumber(ARGV[2 * i])
  local c, slot, held, last, P = cur[i], len[i], counts[i], lasts[i], periods[i]
  local used = sums[i]
  if allowed == 1 then
    -- the bucket lives until its newest slot leaves the read: set when that slot opens
    local field = string.format('%d', c)
    if redis.call('HINCRBY', KEYS[i], field, 1) == 1 then
      redis.call('PEXPIRE', KEYS[i], string.format('%d', (c + S + 1) * slot - now))
    end
    redis.call('HSET', KEYS[i], 't' .. field, string.format('%d', now))
    held[c] = (held[c] or 0) + 1
    last[c] = now
    used = used + 1
  end
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
`

export interface BucketResult {
  used: number
  resetMs: number
}

export interface TakeResult {
  allowed: boolean
  buckets: BucketResult[]
}

interface TakeCommand {
  keygateRateLimit: (numKeys: number, ...args: Array<string | number>) => Promise<number[]>
}

export class RateLimitScript {
  constructor (private readonly redis: RegistryClient) {
    redis.defineCommand('keygateRateLimit', { lua: TAKE_LUA })
  }

  /** One request against `buckets` (Redis key and limit each), atomically. `nowMs`: tests only. */
  async take (buckets: ReadonlyArray<{ name: string, limit: RateLimit }>, nowMs?: number): Promise<TakeResult> {
    const args: Array<string | number> = []
    for (const b of buckets) args.push(b.name)
    args.push(nowMs === undefined ? '' : String(nowMs))
    for (const b of buckets) args.push(b.limit.count, b.limit.periodMs)
    const reply = await (this.redis as unknown as TakeCommand).keygateRateLimit(buckets.length, ...args)
    const out: BucketResult[] = []
    for (let i = 0; i < buckets.length; i++) {
      out.push({ used: reply[1 + 2 * i] as number, resetMs: reply[2 + 2 * i] as number })
    }
    return { allowed: reply[0] === 1, buckets: out }
  }
}
