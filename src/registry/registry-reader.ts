/**
 * The gateway's one read of the registry: key record -> user record (personal
 * keys) -> role record, and the key's org record (its rate limit), in a single round
 * trip (one Lua script, EVALSHA), parsed into records here, once.
 *
 * The script reads keys it derives from the key record, so all records must live in
 * one slot: on one Redis (standalone, or the master Sentinel names), or on a Cluster
 * under a hash-tagged prefix such as `{keygate}:` (docs/topologies.md).
 *
 * The reply is small and flat: HMGET of the fields a decision reads (records.ts,
 * KEY_FIELDS ...), in a fixed order, never a whole hash. A record none of whose fields
 * is set is told apart from a missing one by an EXISTS, which only such a record costs.
 *
 * Reads asked for in the same turn of the event loop (the misses of every request that
 * arrived together) go out together when the turn ends (setImmediate), as one EVALSHA
 * of CHAINS_LUA that reads up to BATCH_MAX chains (a longer turn: several, sent at
 * once): one round trip for them all, and one command for
 * ioredis to encode, time and parse instead of one per read. Each chain keeps its own
 * reply or error: the script reads each under `pcall`, so a record of the wrong type
 * fails its own read only (WRONGTYPE, a bad record); an error of the whole command (a
 * timeout, a closed connection) fails every read in it, as it would have failed each
 * read sent at the same moment. On a Cluster each read is sent alone.
 */
import { isCluster, type RegistryClient } from './redis-client.js'
import type { RedisKeys } from './redis-keys.js'
import {
  identityRecordOf, INVALID, keyRecordOf, orgRecordOf, roleRecordOf, userRecordOf,
  type IdentityRecord, type Invalid, type KeyRecord, type OrgRecord, type RoleRecord, type UserRecord
} from './records.js'
import { CHAIN_LUA, CHAINS_LUA, IMPORTED_LUA, USER_LUA } from './chain-scripts.js'

/** chains one EVALSHA of CHAINS_LUA reads at most (Redis runs nothing else while a script runs) */
const BATCH_MAX = 128

type Reply = Array<string | number | null>

/** What one read of a user found, parsed. */
export interface UserChain {
  user: UserRecord | Invalid | null
  /** null: the role record does not exist (or the user has none) */
  role: RoleRecord | null
}

export function userChainOf (r: Reply): UserChain {
  const s = r as Array<string | null>
  if (r[0] !== 1) return { user: null, role: null }
  const user = userRecordOf(s[1], s[2], s[3])
  return { user, role: r[4] === 1 ? roleRecordOf(s[5], s[6]) : null }
}

/** What one read found, parsed. */
export interface Chain {
  /** null: no such key */
  key: KeyRecord | Invalid | null
  /** a personal key's user record (null: none); undefined for a BOT key or a key that is not valid */
  user?: UserRecord | Invalid | null
  /** the role the key acts with ('' when none) */
  roleName: string
  /** null: the role record does not exist (or no role) */
  role: RoleRecord | null
  /** the key's org record; NO_ORG_RECORD when it has none or it sets nothing */
  org: OrgRecord
  /** the identity a BOT key names (null: no such record); undefined when the key names none */
  identity?: IdentityRecord | Invalid | null
}

const NO_KEY: Chain = Object.freeze({ key: null, roleName: '', role: null, org: orgRecordOf(undefined) })

/** The reply -> records (exported for the unit tests; nothing else reads a reply). */
export function chainOf (r: Reply): Chain {
  if (r.length === 0) return NO_KEY
  const s = r as Array<string | null>
  const key = keyRecordOf(
    s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15], s[16], s[17]
  )
  if (key === INVALID) return { key, roleName: '', role: null, org: orgRecordOf(undefined) }
  const user = key.type !== 'personal' ? undefined : r[18] === 1 ? userRecordOf(s[19], s[20], s[21]) : null
  const roleName = typeof r[22] === 'string' ? r[22] : ''
  const role = r[23] === 1 ? roleRecordOf(s[24], s[25]) : null
  const chain: Chain = { key, user, roleName, role, org: orgRecordOf(s[26], s[27], s[28]) }
  if (key.identity !== undefined) {
    chain.identity = r[29] === 1 ? identityRecordOf(s[30], s[31], s[32], s[33], s[34], s[35]) : null
  }
  return chain
}

interface ChainCommand {
  keygateChain: (key: string, prefix: string) => Promise<Reply>
  /** `keys` key names, then the prefix */
  keygateChains: (...args: Array<string | number>) => Promise<Array<Reply | Error>>
  keygateImported: (lookup: string, prefix: string) => Promise<Reply>
  keygateUser: (key: string, prefix: string) => Promise<Reply>
}

/** An imported key's read: its key id (null when the token is not an imported key) and its chain. */
export interface ImportedChain {
  keyId: string | null
  chain: Chain
}

interface Waiting {
  key: string
  resolve: (chain: Chain) => void
  reject: (err: unknown) => void
}

export class RegistryReader {
  /** reads asked for in this turn of the event loop, sent together when it ends */
  private waiting: Waiting[] = []
  private readonly batches: boolean

  constructor (
    private readonly redis: RegistryClient, private readonly keys: RedisKeys, private readonly prefix: string
  ) {
    redis.defineCommand('keygateChain', { numberOfKeys: 1, lua: CHAIN_LUA })
    // (the number of keys is the call's first argument)
    redis.defineCommand('keygateChains', { lua: CHAINS_LUA })
    redis.defineCommand('keygateImported', { numberOfKeys: 1, lua: IMPORTED_LUA })

    redis.defineCommand('keygateUser', { numberOfKeys: 1, lua: USER_LUA })
    this.batches = !isCluster(redis)
  }

  /** A user record and its role, in one round trip (a session's sign-in: src/admin/sso/). */
  async fetchUser (userId: string): Promise<UserChain> {
    return userChainOf(await (this.redis as unknown as ChainCommand).keygateUser(this.keys.user(userId), this.prefix))
  }

  async fetchChain (keyId: string): Promise<Chain> {
    const key = this.keys.key(keyId)
    if (!this.batches) return chainOf(await (this.redis as unknown as ChainCommand).keygateChain(key, this.prefix))
    return await new Promise<Chain>((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(this.send)
      this.waiting.push({ key, resolve, reject })
    })
  }

  /** An imported key by the SHA-256 (hex) of the whole token: one EVALSHA, sent alone. */
  async fetchImported (tokenSha256: string): Promise<ImportedChain> {
    const reply = await (this.redis as unknown as ChainCommand).keygateImported(
      this.keys.imported(tokenSha256), this.prefix
    )
    if (reply.length === 0) return { keyId: null, chain: NO_KEY }
    const keyId = reply[reply.length - 1]
    if (typeof keyId !== 'string') throw new Error('registry read: an imported key\'s reply without its id')
    return { keyId, chain: chainOf(reply.slice(0, -1)) }
  }

  private readonly send = (): void => {
    const batch = this.waiting
    this.waiting = []
    for (let i = 0; i < batch.length; i += BATCH_MAX) {
      this.sendChunk(batch.length <= BATCH_MAX ? batch : batch.slice(i, i + BATCH_MAX))
    }
  }

  /** One script call: a lone read's own, or up to BATCH_MAX reads' shared one. */
  private sendChunk (chunk: Waiting[]): void {
    const redis = this.redis as unknown as ChainCommand
    if (chunk.length === 1) {
      const w = chunk[0] as Waiting
      redis.keygateChain(w.key, this.prefix).then((reply) => { settle(w, reply) }, w.reject)
    } else {
      redis.keygateChains(...chainsArgs(chunk, this.prefix)).then(
        (replies) => { settleAll(chunk, replies) },
        (err: unknown) => { rejectAll(chunk, err) }
      )
    }
  }
}

/** CHAINS_LUA's arguments: the number of keys, the keys, the prefix. */
function chainsArgs (batch: Waiting[], prefix: string): Array<string | number> {
  const args: Array<string | number> = [batch.length]
  for (const w of batch) args.push(w.key)
  args.push(prefix)
  return args
}

/** CHAINS_LUA's reply, each chain's reply or error to its read. */
function settleAll (batch: Waiting[], replies: Array<Reply | Error>): void {
  for (let i = 0; i < batch.length; i++) {
    const w = batch[i] as Waiting
    const reply = replies[i]
    if (reply instanceof Error) w.reject(reply)
    else if (!Array.isArray(reply)) w.reject(new Error('registry read: the script\'s reply has no chain for a key'))
    else settle(w, reply)
  }
}

function rejectAll (batch: Waiting[], err: unknown): void {
  for (const w of batch) w.reject(err)
}

/** A read's reply parsed, to its caller. */
function settle (w: Waiting, reply: Reply): void {
  let chain: Chain
  try {
    chain = chainOf(reply)
  } catch (e: unknown) {
    // (a reply of an unexpected shape: an outage to the caller, never a decision)
    w.reject(e)
    return
  }
  w.resolve(chain)
}
