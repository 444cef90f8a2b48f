/**
 * The usage counter's writes (counter.ts): one key's counts in one minute, the script
 * that adds them to the minute and hour hashes, the read of the orgs a flush lacks; and
 * the pipelined script calls of a write and the batches they are sent in, which the
 * request log (key-requests.ts) shares.
 */
import type { ChainableCommander } from 'ioredis'
import { hashTag } from '../config/redis-url.js'
import { isCluster, type RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'

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

/** What one script call holds, at most: its names, and its arguments after the shared ones. */
export interface CallLimits {
  names: number
  args: number
}

/**
 * A write's Lua script: the command ioredis's `defineCommand` makes of it (its names as
 * KEYS, counted in the call; then the arguments its entries share; then each entry's own),
 * and what one call of it holds at most.
 */
export interface Script {
  command: string
  lua: string
  limits: CallLimits
}

/** Makes `script` a command of `redis` (EVALSHA, EVAL after a Redis restart). */
export function defineScript (redis: RegistryClient, script: Script): void {
  redis.defineCommand(script.command, { lua: script.lua })
}

/**
 * The flush's script: the counts of one minute of one or more keys (or orgs), each into
 * its minute hash and its hour hash. KEYS: minute hash, hour hash, per key; ARGV: the
 * minute of the hour, the hour of the day, the two expiries (epoch s), then four counts
 * per key. 500 keys (or orgs) a call.
 */
export const USAGE_ADD: Script = {
  command: 'keygateUsageAdd',
  lua: `
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
`,
  limits: { names: 2 * 500, args: 4 * 500 }
}

/** A script call's arguments after its names. */
type Args = ReadonlyArray<string | number>

/**
 * The org of each counted key whose decision did not name it (a refusal of a revoked
 * key...), read in one round trip.
 */
export async function fillOrgs (
  redis: RegistryClient, keys: RedisKeys, batches: ReadonlyArray<ReadonlyMap<string, Counts>>
): Promise<void> {
  const missing: Counts[] = []
  let reads: Writes | undefined
  for (const counts of batches) {
    for (const [keyId, c] of counts) {
      if (c.org !== undefined) continue
      missing.push(c)
      reads ??= new Writes(redis)
      reads.hget(keys.key(keyId), 'org')
    }
  }
  if (reads === undefined) return
  const replies = await reads.exec()
  for (let i = 0; i < missing.length; i++) {
    const org = replies[i]
    if (typeof org === 'string' && org !== '') (missing[i] as Counts).org = org
  }
}

/** What a call of a script defined with `defineScript` takes. */
type ScriptCommand = (numKeys: number, ...args: Array<string | number>) => unknown

/** A script call being built: its script, its names, the arguments its entries share, each entry's own. */
interface Call {
  script: Script
  names: string[]
  shared: Args
  args: Array<string | number>
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
 * The commands of one write, pipelined: plain reads (`hget`), and entries of scripts
 * (`add`), as few calls as each script's limits allow. A standalone Redis gets one ioredis
 * pipeline (one socket write). A Cluster gets the same calls built per slot (the names of
 * one call share its hash tag: with keygate's hash-tagged prefix, every name is in the
 * registry's slot, so as many a call as on one Redis), each sent at once without waiting
 * for the one before (ioredis routes each to its node and writes it to that node's
 * connection, so each node's commands are pipelined on the wire; an ioredis pipeline
 * serves one node only). The usage flush (counter.ts) and the request log
 * (key-requests.ts) write through it.
 */
export class Writes {
  private readonly line: ChainableCommander | undefined
  private readonly sent: Array<Promise<unknown>> = []
  /** the calls being built, by the slot name of their names ('' on a standalone Redis) */
  private readonly calls = new Map<string, Call>()

  constructor (private readonly redis: RegistryClient) {
    this.line = isCluster(redis) ? undefined : redis.pipeline()
  }

  hget (key: string, field: string): void {
    if (this.line !== undefined) this.line.hget(key, field)
    else this.sent.push(this.redis.hget(key, field))
  }

  /**
   * One entry of `script`: its `names` (one slot: they differ after the tag), the arguments it shares with the
   * entries of its call (`shared`, compared by identity: a new array starts a new call), and its own.
   */
  add (script: Script, names: readonly string[], shared: Args, args: Args): void {
    const slot = this.line === undefined ? slotName(names[0] as string) : ''
    let call = this.calls.get(slot)
    // (a call holds one entry at least, so an entry past the limits alone is a call of its own)
    if (call !== undefined && (
      call.script !== script || call.shared !== shared ||
      call.names.length + names.length > script.limits.names ||
      call.args.length + args.length > script.limits.args
    )) {
      this.call(call)
      call = undefined
    }
    if (call === undefined) this.calls.set(slot, call = { script, names: [], shared, args: [] })
    for (const n of names) call.names.push(n)
    for (const a of args) call.args.push(a)
  }

  private call ({ script, names, shared, args }: Call): void {
    const to = (this.line ?? this.redis) as unknown as Record<string, ScriptCommand>
    const sent = (to[script.command] as ScriptCommand).call(to, names.length, ...names, ...shared, ...args)
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

/**
 * Entries of scripts written `perWrite` at a time: each batch is one `Writes` (a pipelined
 * write), sent when full and answered before the next is built, so a write of many keys
 * holds one batch of names, arguments and commands at a time, never all of them. The
 * usage flush (counter.ts) and the request log (key-requests.ts) write through it.
 */
export class BatchedWrites {
  private writes: Writes
  private entries = 0

  constructor (private readonly redis: RegistryClient, private readonly perWrite: number) {
    this.writes = new Writes(redis)
  }

  /** `Writes.add`; a full batch is sent and answered before this returns (true: it was) */
  async add (script: Script, names: readonly string[], shared: Args, args: Args): Promise<boolean> {
    this.writes.add(script, names, shared, args)
    if (++this.entries < this.perWrite) return false
    await this.end()
    return true
  }

  /** Sends the entries added since the last batch, and waits for the answer. */
  async end (): Promise<void> {
    if (this.entries === 0) return
    const writes = this.writes
    this.writes = new Writes(this.redis)
    this.entries = 0
    await writes.exec()
  }
}
