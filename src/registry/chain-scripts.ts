/**
 * The registry read's Lua scripts (registry-reader.ts says what each read does and why it
 * is one round trip): the fields read are records.ts's lists, in their order.
 */
import { IDENTITY_FIELDS, KEY_FIELDS, ORG_FIELDS, ROLE_FIELDS, USER_FIELDS } from './records.js'

const fields = (names: readonly string[]): string => names.map((n) => `'${n}'`).join(', ')

/**
 * Reply: {} when the key record does not exist; else, flat, KEY_FIELDS (18), the user
 * record's existence (1/0) and USER_FIELDS (3), the role's name ('' when none), the
 * role's existence and ROLE_FIELDS (2), ORG_FIELDS (3), and a BOT key's identity
 * record's existence and IDENTITY_FIELDS (6). A missing field is nil (null).
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
local ident, i, ifound = k[15], {false, false, false, false, false, false}, 0
if ktype == 'bot' and ident and ident ~= '' then
  local name = ARGV[1] .. 'identity:' .. ident
  i = redis.call('HMGET', name, ${fields(IDENTITY_FIELDS)})
  ifound = found(i, name)
end
return {k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12], k[13], k[14], k[15], k[16],
  k[17], k[18], ufound, u[1], u[2], u[3], role, rfound, r[1], r[2], o[1], o[2], o[3],
  ifound, i[1], i[2], i[3], i[4], i[5], i[6]${extra}}
`

const FOUND_LUA = `
local function found (values, name)
  for i = 1, #values do if values[i] then return 1 end end
  return redis.call('EXISTS', name)
end
`

export const CHAIN_LUA = FOUND_LUA + chainLua('local kname = KEYS[1]', '')

/**
 * Several keys' chains (KEYS, the key records' names): one reply per key, in order,
 * each the chain's reply above or, when its read failed (a record of the wrong type),
 * that error as an error reply of its own.
 */
export const CHAINS_LUA = `${FOUND_LUA}
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

/**
 * An imported key's read (docs/imports.md): KEYS[1] is `<prefix>imported:<sha256 hex>`, whose
 * value is the key id; then the chain as above, the key id appended to the reply. Still
 * one round trip: a token that is not in keygate's format costs one Redis read at most.
 */
export const IMPORTED_LUA = FOUND_LUA + chainLua(
  "local id = redis.call('GET', KEYS[1])\nif not id then return {} end\nlocal kname = ARGV[1] .. 'key:' .. id", ', id'
)

/**
 * A signed-in person's user record and its role (src/admin/sso/): USER_FIELDS (3) and
 * the user record's existence, then the role's existence and ROLE_FIELDS (2).
 */
export const USER_LUA = `
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
