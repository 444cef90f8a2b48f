// nginx + Lua authentication with a shared-dict cache in front of Redis: the
// architecture of Kong (an nginx whose access phase runs the key check in Lua, a
// `lua_shared_dict` caching what the database said), as a server under test, for
// comparison with nginx + keygate's authorizer.
//
// The Lua side does what keygate's decision does for the bench's request, against the
// same registry records (bench/keygate.ts): the key's form (`kg_<id>_<secret><checksum>`),
// its record, its user and role (HGETALL each, from Redis, on a miss), the secret's
// SHA-256 against the record's hash, the status, the route's permission
// (`users:read`), then the identity headers to the backend. A decision is cached in the
// shared dict under the whole key for `CACHE_TTL_S`: a cached request reads the dict
// once and touches neither Redis nor a hash.
//
// Debian has no Lua Redis client package (no lua-resty-redis), so the Lua speaks
// Redis's protocol (RESP) itself over ngx_lua's cosocket (`ngx.socket.tcp`, with its
// keep-alive pool): the few lines a HGETALL takes. SHA-256 is libcrypto's, through
// LuaJIT's FFI (nginx links OpenSSL). Both run only on a miss.
//
// Needs Debian's libnginx-mod-http-lua (ngx_lua, with lua-resty-core).
import { existsSync } from 'node:fs'
import { freePort } from './port.js'
import { BENCH_PATH } from './servers.js'
import { startCustomNginx } from './nginx.js'
import type { ChildServer } from './process.js'

export const LUA_MODULES = [
  '/usr/lib/nginx/modules/ndk_http_module.so', '/usr/lib/nginx/modules/ngx_http_lua_module.so'
]
/** how long a decision stays in the shared dict */
const CACHE_TTL_S = 60

function luaAuth (redisPort: number, prefix: string): string {
  return `
-- (the file's main chunk runs for every request: what is set up once is kept in
-- package.loaded, since ffi.cdef and ffi.load must run once per worker)
local sha256_hex = package.loaded.keygate_sha256_hex
if not sha256_hex then
  local ffi = require "ffi"
  ffi.cdef[[ unsigned char *SHA256(const unsigned char *d, size_t n, unsigned char *md); ]]
  local crypto = ffi.load("crypto")
  local digest = ffi.new("unsigned char[32]")
  sha256_hex = function (s)
    crypto.SHA256(s, #s, digest)
    local out = {}
    for i = 0, 31 do out[#out + 1] = string.format("%02x", digest[i]) end
    return table.concat(out)
  end
  package.loaded.keygate_sha256_hex = sha256_hex
end
local cache = ngx.shared.keygate_keys

-- HGETALL over RESP; nil when the hash does not exist
local function hgetall (sock, key)
  local ok, err = sock:send("*2\\r\\n$7\\r\\nHGETALL\\r\\n$" .. #key .. "\\r\\n" .. key .. "\\r\\n")
  if not ok then return nil, err end
  local head = sock:receive()
  if not head or head:sub(1, 1) ~= "*" then return nil, "bad reply" end
  local n = tonumber(head:sub(2))
  if n == 0 then return nil end
  local t = {}
  local name
  for i = 1, n do
    local len = tonumber(sock:receive():sub(2))
    local v = sock:receive(len + 2):sub(1, len)
    if i % 2 == 1 then name = v else t[name] = v end
  end
  return t
end

local function refuse (status)
  ngx.status = status
  ngx.header["Content-Type"] = "application/json"
  ngx.say(status == 401 and '{"error":{"code":"unauthorized"}}' or '{"error":{"code":"forbidden"}}')
  return ngx.exit(status)
end

local key = (ngx.var.http_authorization or ""):match("^Bearer (kg_[%w]+_[%w]+)$")
if not key then return refuse(401) end
local cached = cache:get(key)
if not cached then
  local id, rest = key:match("^kg_(%w+)_(%w+)$")
  if not id or #rest <= 6 then return refuse(401) end
  local secret = rest:sub(1, #rest - 6)
  local sock = ngx.socket.tcp()
  sock:settimeout(1000)
  local ok, err = sock:connect("127.0.0.1", ${redisPort})
  if not ok then ngx.log(ngx.ERR, "redis: ", err) return ngx.exit(503) end
  local rec = hgetall(sock, "${prefix}key:" .. id)
  local user = rec and rec.user and hgetall(sock, "${prefix}user:" .. rec.user)
  local role = user and hgetall(sock, "${prefix}role:" .. user.role)
  sock:setkeepalive(10000, 16)
  if not rec or rec.status ~= "active" or sha256_hex(secret) ~= rec.hash then
    cached = "401"
  elseif not user or user.status ~= "active" or not role
      or not (" " .. (role.permissions or "") .. " "):find(" users:read ", 1, true) then
    cached = "403"
  else
    cached = table.concat({ id, rec.type, rec.user, user.org, user.role }, "\\n")
  end
  cache:set(key, cached, ${CACHE_TTL_S})
end
if cached == "401" then return refuse(401) end
if cached == "403" then return refuse(403) end
local id, type, user, org, role = cached:match("^([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)$")
ngx.req.set_header("X-Auth-Key-Id", id)
ngx.req.set_header("X-Auth-Key-Type", type)
ngx.req.set_header("X-Auth-User-Id", user)
ngx.req.set_header("X-Auth-Org-Id", org)
ngx.req.set_header("X-Auth-Role", role)
ngx.req.clear_header("Authorization")
`
}

/** nginx with the Lua key check in its access phase, proxying to the origin. */
export async function startNginxLua (
  redisPort: number, prefix: string, originUrl: string, cpus: string | undefined
): Promise<ChildServer> {
  const missing = LUA_MODULES.filter((m) => !existsSync(m))
  if (missing.length > 0) {
    throw new Error(`nginx + Lua: ${missing.join(', ')} not found (apt-get install -y libnginx-mod-http-lua)`)
  }
  const port = await freePort()
  const backendPort = Number(new URL(originUrl).port)
  const lua = luaAuth(redisPort, prefix)
  return await startCustomNginx({
    port,
    main: LUA_MODULES.map((m) => `load_module ${m};`).join('\n'),
    files: { 'auth.lua': lua },
    http: (dir) => `
lua_shared_dict keygate_keys 64m;
upstream backend {
    server 127.0.0.1:${backendPort};
    keepalive 64;
}
server {
    listen 127.0.0.1:${port};
    location /api/ {
        access_by_lua_file ${dir}/auth.lua;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass http://backend;
    }
}`,
    readyUrl: `http://127.0.0.1:${port}${BENCH_PATH}`,
    readyStatus: 401,
    cpus
  })
}
