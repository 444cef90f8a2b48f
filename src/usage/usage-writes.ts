/**
 * The usage counter's writes (counter.ts): one key's counts in one minute, the script
 * that adds them to the minute and hour hashes, and the pipelined write of a flush.
 */
import type { ChainableCommander } from 'ioredis'
import { hashTag } from '../config/redis-url.js'
import { isCluster, type RegistryClient } from '../registry/redis-client.js'

/** One key's counts in one minute. */
export class Counts {
  a = 0
  r = 0
  l = 0
  e = 0
  constructor (public org: string | undefined) {}
  add (outcome: number, n = 1): void {
    if (outcome === 0) this.a += n
    else if (outcome === 1) this.r += n
    else if (outcome === 2) this.l += n
    else this.e += n
  }
}

/**
 * The flush's script: the counts of one minute of one or more keys (or orgs), each into
 * its minute hash and its hour hash. KEYS: minute hash, hour hash, per key; ARGV: the
 * minute of the hour, the hour of the day, the two expiries (epoch s), then four counts
 * per key.
 */
export const ADD_LUA = `
local letters = {'a', 'r', 'l', 'e'}
for k = 1, #KEYS, 2 do
  local base = 4 + (k - 1) * 2
  for i = 1, 4 do
    local n = tonumber(ARGV[base + i])
    if n > 0 then
      redis.call('HINCRBY', KEYS[k], ARGV[1] .. letters[i], n)
      redis.call('HINCRBY', KEYS[k + 1], ARGV[2] .. letters[i], n)
    end
  end
  redis.call('EXPIREAT', KEYS[k], ARGV[3])
  redis.call('EXPIREAT', KEYS[k + 1], ARGV[4])
end
return 1
`

/** keys (or orgs) per script call, at most (on a Cluster, every key of a call shares its slot) */
const PER_CALL = 500

interface AddCommand {
  keygateUsageAdd: (numKeys: number, ...args: Array<string | number>) => unknown
}

/** A script call being built: its keys (two a key), its minute's arguments, four counts a key. */
interface Call {
  keys: string[]
  args: Array<string | number>
  counts: number[]
}

/**
 * What Redis Cluster hashes to pick a key's slot: its hash tag (the text between the
 * first `{` and the first `}` after it, when not empty), else the whole name. Two names
 * with the same one are in the same slot.
 */
function slotName (name: string): string {
  return hashTag(name) ?? name
}

/**
 * The commands of one write, pipelined: a standalone Redis gets one ioredis pipeline (one
 * socket write), its script calls each adding the counts of up to PER_CALL keys. A
 * Cluster gets the same calls built per slot (the keys of one call share its hash tag:
 * with keygate's hash-tagged prefix, every usage hash is in the registry's slot, so
 * PER_CALL keys a call as on one Redis), each sent at once without waiting for the one
 * before (ioredis routes each to its node and writes it to that node's connection, so
 * each node's commands are pipelined on the wire; an ioredis pipeline serves one node
 * only).
 */
export class Writes {
  private readonly line: ChainableCommander | undefined
  private readonly sent: Array<Promise<unknown>> = []
  /** the calls being built, by the slot name of their keys ('' on a standalone Redis) */
  private readonly calls = new Map<string, Call>()

  constructor (private readonly redis: RegistryClient) {
    this.line = isCluster(redis) ? undefined : redis.pipeline()
  }

  hget (key: string, field: string): void {
    if (this.line !== undefined) this.line.hget(key, field)
    else this.sent.push(this.redis.hget(key, field))
  }

  /**
   * the counts `c` of the minute `args` describes, into `minutes` and `hours` (one slot: the names differ after the
   * tag)
   */
  add (minutes: string, hours: string, args: Array<string | number>, c: Counts): void {
    const slot = this.line === undefined ? slotName(minutes) : ''
    let call = this.calls.get(slot)
    if (call !== undefined && (call.args !== args || call.keys.length === 2 * PER_CALL)) {
      this.call(call)
      call = undefined
    }
    if (call === undefined) this.calls.set(slot, call = { keys: [], args, counts: [] })
    call.keys.push(minutes, hours)
    call.counts.push(c.a, c.r, c.l, c.e)
  }

  private call ({ keys, args, counts }: Call): void {
    const to = (this.line ?? this.redis) as unknown as AddCommand
    const sent = to.keygateUsageAdd(keys.length, ...keys, ...args, ...counts)
    if (this.line === undefined) this.sent.push(sent as Promise<unknown>)
  }

  /** Runs the commands; their replies in the order they were added (an error rejects). */
  async exec (): Promise<unknown[]> {
    for (const call of this.calls.values()) this.call(call)
    this.calls.clear()
    if (this.line === undefined) return await Promise.all(this.sent)
    const replies = (await this.line.exec()) ?? []
    return replies.map(([err, value]) => {
      if (err !== null) throw err
      return value
    })
  }
}
