/**
 * The gateway's one read of the registry: key record -> user record (personal
 * keys) -> role record, and the key's org record (its rate limit), in a single round
 * trip (one Lua script, EVALSHA).
 *
 * The script reads keys it derives from the key record, so all records must live in
 * one slot: on one Redis (standalone, or the master Sentinel names), or on a Cluster
 * under a hash-tagged prefix such as `{keygate}:` (docs/topologies.md).
 */
import type { RegistryClient } from './redis-client.js'
import type { RedisKeys } from './redis-keys.js'

const CHAIN_LUA = `
local key = redis.call('HGETALL', KEYS[1])
if #key == 0 then return {} end
local ktype, user, role, org
for i = 1, #key, 2 do
  local f = key[i]
  if f == 'type' then ktype = key[i + 1]
  elseif f == 'user' then user = key[i + 1]
  elseif f == 'role' then role = key[i + 1]
  elseif f == 'org' then org = key[i + 1] end
end
local u = {}
if ktype == 'personal' then
  role = nil
  if user and user ~= '' then
    u = redis.call('HGETALL', ARGV[1] .. 'user:' .. user)
    for i = 1, #u, 2 do if u[i] == 'role' then role = u[i + 1] end end
  end
elseif ktype ~= 'bot' then
  role = nil
end
local r = {}
if role and role ~= '' then r = redis.call('HGETALL', ARGV[1] .. 'role:' .. role) end
local o = {}
if org and org ~= '' then o = redis.call('HGETALL', ARGV[1] .. 'org:' .. org) end
return {key, u, r, role or '', o}
`

/** HGETALL replies as flat [field, value, ...] arrays; empty when the record is missing. */
export interface RawChain {
  key: string[]
  user: string[]
  role: string[]
  roleName: string
  /** the key's org record */
  org: string[]
}

interface ChainCommand {
  keygateChain: (key: string, prefix: string) => Promise<[string[], string[], string[], string, string[]] | []>
}

export class RegistryReader {
  constructor (private readonly redis: RegistryClient, private readonly keys: RedisKeys, private readonly prefix: string) {
    redis.defineCommand('keygateChain', { numberOfKeys: 1, lua: CHAIN_LUA })
  }

  async fetchChain (keyId: string): Promise<RawChain> {
    const reply = await (this.redis as unknown as ChainCommand).keygateChain(this.keys.key(keyId), this.prefix)
    if (reply.length === 0) return { key: [], user: [], role: [], roleName: '', org: [] }
    const [key, user, role, roleName, org] = reply
    return { key, user, role, roleName, org }
  }
}
