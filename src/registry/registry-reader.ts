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
  INVALID, KEY_FIELDS, keyRecordOf, ORG_FIELDS, orgRecordOf, ROLE_FIELDS, roleRecordOf, USER_FIELDS, userRecordOf,
  type Invalid, type KeyRecord, type OrgRecord, type RoleRecord, type UserRecord
} from './records.js'

const fields = (names: readonly string[]): string => names.map((n) => `'${n}'`).join(', ')

/**
 * Reply: {} when the key record does not exist; else, flat, the first 14 KEY_FIELDS, the
 * user record's existence (1/0) and USER_FIELDS (3), the role's name ('' when none), the
 * role's existence and ROLE_FIELDS (2), ORG_FIELDS (3), and the last two KEY_FIELDS (the
 * shadow restriction). A missing field is nil (null).
 */
const chainLua = (start: string, extra: string): string => `
${start}
local k = redis.call('HMGET', kname, ${fields(KEY_FIELDS)})
if found(k, kname) == 0 then return {} end
local ktype, org, user, role = k[1], k[3], k[5], k[6]
local u, ufound = {false, false, false}, 0
if ktype == 'personal' then
  role = false
  if user and user ~= '' then
    local name = ARGV[1] .. 'user:' .. user
    u = redis.call('HMGET', name, ${fields(USER_FIELDS)})
    ufound = found(u, name)
    role = u[2]
  end
elseif ktype ~= 'bot' then
  role = false
end
local r, rfound = {false, false}, 0
if role and role ~= '' then
  local name = ARGV[1] .. 'role:' .. role
  r = redis.call('HMGET', name, ${fields(ROLE_FIELDS)})
  rfound = found(r, name)
else
  role = ''
end
local o = {false, false, false}
if org and org ~= '' then o = redis.call('HMGET', ARGV[1] .. 'org:' .. org, ${fields(ORG_FIELDS)}) end
return {k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12], k[13], k[14], ufound, u[1], u[2],
  u[3], role, rfound, r[1], r[2], o[1], o[2], o[3], k[15], k[16]${extra}}
`

const FOUND_LUA = `
local function found (values, name)
  for i = 1, #values do if values[i] then return 1 end end
  return redis.call('EXISTS', name)
end
`

const CHAIN_LUA = FOUND_LUA + chainLua('local kname = KEYS[1]', '')

/**
 * Several keys' chains (KEYS, the key records' names): one reply per key, in order,
 * each the chain's reply above or, when its read failed (a record of the wrong type),
 * that error as an error reply of its own.
 */
const CHAINS_LUA = `${FOUND_LUA}
local function chain (kname)
${chainLua('', '')}
end
local out = {}
for i = 1, #KEYS do
  local ok, r = pcall(chain, KEYS[i])
  if ok then
    out[i] = r
  elseif type(r) == 'table' and r.err then
    out[i] = r
  else
    out[i] = {err = tostring(r)}
  end
end
return out
`

/** chains one EVALSHA of CHAINS_LUA reads at most (Redis runs nothing else while a script runs) */
const BATCH_MAX = 128

/**
 * An imported key's read (docs/imports.md): KEYS[1] is `<prefix>imported:<sha256 hex>`, whose
 * value is the key id; then the chain as above, the key id appended to the reply. Still
 * one round trip: a token that is not in keygate's format costs one Redis read at most.
 */
const IMPORTED_LUA = FOUND_LUA + chainLua(
  "local id = redis.call('GET', KEYS[1])\nif not id then return {} end\nlocal kname = ARGV[1] .. 'key:' .. id", ', id'
)

/**
 * A signed-in person's user record and its role (src/admin/sso/): USER_FIELDS (3) and
 * the user record's existence, then the role's existence and ROLE_FIELDS (2).
 */
const USER_LUA = `
local function found (values, name)
  for i = 1, #values do if values[i] then return 1 end end
  return redis.call('EXISTS', name)
end
local u = redis.call('HMGET', KEYS[1], ${fields(USER_FIELDS)})
local ufound = found(u, KEYS[1])
local r, rfound = {false, false}, 0
if ufound == 1 and u[2] and u[2] ~= '' then
  local name = ARGV[1] .. 'role:' .. u[2]
  r = redis.call('HMGET', name, ${fields(ROLE_FIELDS)})
  rfound = found(r, name)
end
return {ufound, u[1], u[2], u[3], rfound, r[1], r[2]}
`

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
}

const NO_KEY: Chain = Object.freeze({ key: null, roleName: '', role: null, org: orgRecordOf(undefined) })

/** The reply -> records (exported for the unit tests; nothing else reads a reply). */
export function chainOf (r: Reply): Chain {
  if (r.length === 0) return NO_KEY
  const s = r as Array<string | null>
  const key = keyRecordOf(
    s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13], s[25], s[26]
  )
  if (key === INVALID) return { key, roleName: '', role: null, org: orgRecordOf(undefined) }
  const user = key.type !== 'personal' ? undefined : r[14] === 1 ? userRecordOf(s[15], s[16], s[17]) : null
  const roleName = typeof r[18] === 'string' ? r[18] : ''
  const role = r[19] === 1 ? roleRecordOf(s[20], s[21]) : null
  return { key, user, roleName, role, org: orgRecordOf(s[22], s[23], s[24]) }
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
