// The decision order (docs/request-flow.md) and the permission rules, as a
// decision matrix: route prefix -> credential -> key -> rule -> permission.
// Authentication always precedes authorization: on a protected prefix a request
// without a valid key is 401, never 403 or 404; under no prefix it is 404 and
// neither Redis nor an upstream is contacted.
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'
import type { RawResponse } from '../../helpers/raw-http.js'

const gw = await startGateway(t)
const f = gw.fixtures

// the standard world, plus: a user and a BOT key whose role is missing from Redis (made
// while it exists, as the registry's writes require, then deleted as redis-cli would)
await f.role('ghost', ['users:read'])
await f.user('dave', 'acme', 'ghost')
const ghostBot = await f.botKey('ghost', 'acme')
const daveKey = await f.personalKey('dave')
await gw.client.del(f.keys.role('ghost'))

const keys: Record<string, string> = {
  alice: (await f.personalKey('alice')).key, // acme, reader: users:read
  bob: (await f.personalKey('bob')).key, // acme, writer: users:*
  carol: (await f.personalKey('carol')).key, // globex, orgreader: orgs:read
  dave: daveKey.key, // acme, role "ghost" (missing)
  adminBot: (await f.botKey('admin', 'acme')).key, // *
  noneBot: (await f.botKey('none', 'acme')).key, // no permission at all
  ghostBot: ghostBot.key,
  garbage: 'not-a-key'
}

/** Who calls: a key name from `keys`, 'fresh' (a valid key never used before), or no Authorization header. */
type Caller = keyof typeof keys | 'fresh' | 'nobody'

type Challenge =
  | 'none' // Bearer realm="keygate"
  | 'invalid_token'
  | 'insufficient_scope' // without a scope attribute
  | { scope: string } // insufficient_scope with scope="..."

interface Row {
  what: string
  method: string
  path: string
  caller: Caller
  status: number
  challenge?: Challenge
}

const CODES: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 404: 'not_found' }
const MESSAGES: Record<number, string> = {
  401: 'Invalid or missing authentication key',
  403: 'Insufficient permissions for this resource',
  404: 'Resource not found'
}

const matrix: Row[] = [
  // 1. no route prefix: 404, whoever asks, before any credential is looked at
  { what: 'no prefix, no key', method: 'GET', path: '/nope', caller: 'nobody', status: 404 },
  { what: 'no prefix, malformed key', method: 'GET', path: '/nope', caller: 'garbage', status: 404 },
  { what: 'no prefix, valid key', method: 'GET', path: '/nope', caller: 'fresh', status: 404 },
  { what: 'root path, valid key', method: 'GET', path: '/', caller: 'fresh', status: 404 },
  { what: 'another API version, valid key', method: 'GET', path: '/api/v2/users', caller: 'fresh', status: 404 },
  { what: 'a parent of the prefix, valid key', method: 'GET', path: '/api', caller: 'fresh', status: 404 },
  { what: 'no prefix, unknown method', method: 'PURGE', path: '/nope', caller: 'nobody', status: 404 },

  // 2-5. protected prefix without a valid key: 401, never 403 or 404
  { what: 'rule path, no key', method: 'GET', path: '/api/v1/users', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'rule path, malformed key', method: 'GET', path: '/api/v1/users', caller: 'garbage', status: 401, challenge: 'invalid_token' },
  { what: 'path with no rule, no key', method: 'GET', path: '/api/v1/nothing/here', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'path with no rule, malformed key', method: 'GET', path: '/api/v1/nothing/here', caller: 'garbage', status: 401, challenge: 'invalid_token' },
  { what: 'the prefix itself, no key', method: 'GET', path: '/api/v1', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'org path of another org, no key', method: 'GET', path: '/api/v1/orgs/globex/x', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'PROPFIND, no key', method: 'PROPFIND', path: '/api/v1/users', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'PURGE on a path with no rule, malformed key', method: 'PURGE', path: '/api/v1/nothing', caller: 'garbage', status: 401, challenge: 'invalid_token' },
  { what: 'DELETE with no rule, no key', method: 'DELETE', path: '/api/v1/users', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'OPTIONS, no key', method: 'OPTIONS', path: '/api/v1/users', caller: 'nobody', status: 401, challenge: 'none' },
  { what: 'HEAD, no key', method: 'HEAD', path: '/api/v1/users', caller: 'nobody', status: 401, challenge: 'none' },

  // 7. valid key, no rule under the prefix: default deny, no scope
  { what: 'no rule for the path', method: 'GET', path: '/api/v1/nothing/here', caller: 'alice', status: 403, challenge: 'insufficient_scope' },
  { what: 'no rule for the path, even for *', method: 'GET', path: '/api/v1/nothing/here', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },
  { what: 'no rule for the method (DELETE), even for *', method: 'DELETE', path: '/api/v1/users', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },
  { what: 'no rule for PROPFIND', method: 'PROPFIND', path: '/api/v1/users', caller: 'alice', status: 403, challenge: 'insufficient_scope' },
  { what: 'no rule for PURGE, even for *', method: 'PURGE', path: '/api/v1/users', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },
  { what: 'the prefix itself has no rule', method: 'GET', path: '/api/v1', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },
  { what: 'a GET-only rule does not cover POST', method: 'POST', path: '/api/v1/open/x', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },
  { what: 'no rule for a sub-path of a static rule', method: 'GET', path: '/api/v1/users/42', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },

  // 7. rule matched, permission missing: 403 with the rule's scope
  { what: 'orgreader reading users', method: 'GET', path: '/api/v1/users', caller: 'carol', status: 403, challenge: { scope: 'users:read' } },
  { what: 'reader writing users', method: 'POST', path: '/api/v1/users', caller: 'alice', status: 403, challenge: { scope: 'users:write' } },
  { what: 'users:* does not cover orgs:read', method: 'GET', path: '/api/v1/orgs/acme/x', caller: 'bob', status: 403, challenge: { scope: 'orgs:read' } },
  { what: 'a role with no permission', method: 'GET', path: '/api/v1/users', caller: 'noneBot', status: 403, challenge: { scope: 'users:read' } },

  // 7. path-parameter (org) constraint fails: 403 without scope
  { what: 'org mismatch', method: 'GET', path: '/api/v1/orgs/acme/projects', caller: 'carol', status: 403, challenge: 'insufficient_scope' },
  { what: 'org mismatch, even for *', method: 'GET', path: '/api/v1/orgs/globex/projects', caller: 'adminBot', status: 403, challenge: 'insufficient_scope' },
  { what: 'org match', method: 'GET', path: '/api/v1/orgs/globex/projects', caller: 'carol', status: 200 },
  { what: 'org match, * rule covers any method', method: 'DELETE', path: '/api/v1/orgs/globex/projects', caller: 'carol', status: 200 },
  { what: 'org match, * rule covers PROPFIND', method: 'PROPFIND', path: '/api/v1/orgs/globex/projects', caller: 'carol', status: 200 },

  // GET rules cover HEAD
  { what: 'HEAD under a GET rule', method: 'HEAD', path: '/api/v1/users', caller: 'alice', status: 200 },
  { what: 'HEAD under a GET rule, permission missing', method: 'HEAD', path: '/api/v1/users', caller: 'carol', status: 403, challenge: { scope: 'users:read' } },
  { what: 'HEAD under a GET rule without permissions', method: 'HEAD', path: '/api/v1/open/x', caller: 'noneBot', status: 200 },

  // a rule with no permissions admits any valid key
  { what: 'open rule, role with no permission', method: 'GET', path: '/api/v1/open/anything', caller: 'noneBot', status: 200 },
  { what: 'open rule, personal key', method: 'GET', path: '/api/v1/open/a/b/c', caller: 'carol', status: 200 },
  { what: 'open rule, no key', method: 'GET', path: '/api/v1/open/anything', caller: 'nobody', status: 401, challenge: 'none' },

  // wildcard permissions
  { what: 'users:read granted', method: 'GET', path: '/api/v1/users', caller: 'alice', status: 200 },
  { what: 'users:* covers users:read', method: 'GET', path: '/api/v1/users', caller: 'bob', status: 200 },
  { what: 'users:* covers users:write', method: 'POST', path: '/api/v1/users', caller: 'bob', status: 200 },
  { what: '* covers users:read', method: 'GET', path: '/api/v1/users', caller: 'adminBot', status: 200 },
  { what: '* covers users:write', method: 'POST', path: '/api/v1/users', caller: 'adminBot', status: 200 },
  { what: '* covers orgs:read', method: 'GET', path: '/api/v1/orgs/acme/x', caller: 'adminBot', status: 200 },

  // 6. a role missing from Redis grants nothing (but the key is still valid)
  { what: 'BOT key, role missing', method: 'GET', path: '/api/v1/users', caller: 'ghostBot', status: 403, challenge: { scope: 'users:read' } },
  { what: 'personal key, user role missing', method: 'GET', path: '/api/v1/users', caller: 'dave', status: 403, challenge: { scope: 'users:read' } },
  { what: 'BOT key, role missing, open rule', method: 'GET', path: '/api/v1/open/x', caller: 'ghostBot', status: 200 },
  { what: 'personal key, user role missing, open rule', method: 'GET', path: '/api/v1/open/x', caller: 'dave', status: 200 }
]

t.test('control: the Redis watch sees the lookup of a key that is not cached', async (t) => {
  const { key } = await f.botKey('admin', 'acme')
  const { result: res, commands } = await watchGatewayRedis(gw, () => gw.get('/api/v1/users', key))
  t.equal(res.status, 200)
  t.not(commands.length, 0, 'the gateway read the registry')
})

for (const row of matrix) {
  t.test(`${row.method} ${row.path} as ${row.caller} (${row.what}) -> ${row.status}`, async (t) => {
    const key = row.caller === 'fresh' ? (await f.botKey('admin', 'acme')).key : keys[row.caller]
    const headers: Record<string, string> = key === undefined ? {} : { Authorization: `Bearer ${key}` }
    const before = gw.upstream.requests.length
    const { result: res, commands } = await watchGatewayRedis(gw, () => gw.send(row.method, row.path, headers))

    t.equal(res.status, row.status, 'status')
    if (row.method !== 'HEAD' && row.status !== 200) {
      t.same(res.json(), { error: { code: CODES[row.status], message: MESSAGES[row.status], status: row.status } }, 'error body')
    }
    t.same(challengeOf(res), expectedChallenge(row.challenge), 'WWW-Authenticate')
    if (row.status === 200) {
      t.equal(gw.upstream.requests.length, before + 1, 'forwarded once')
      t.equal(gw.upstream.last()?.method, row.method, 'method forwarded')
      t.equal(gw.upstream.last()?.url, row.path, 'path forwarded')
    } else {
      t.equal(gw.upstream.requests.length, before, 'never reaches the upstream')
    }
    if (row.status === 404) t.same(commands, [], 'no Redis command for a path under no prefix')
  })
}

interface ParsedChallenge {
  scheme: string
  params: Record<string, string>
}

function expectedChallenge (c: Challenge | undefined): ParsedChallenge | undefined {
  if (c === undefined) return undefined
  const params: Record<string, string> = { realm: 'keygate' }
  if (c === 'invalid_token' || c === 'insufficient_scope') params.error = c
  if (typeof c === 'object') {
    params.error = 'insufficient_scope'
    params.scope = c.scope
  }
  return { scheme: 'bearer', params }
}

/** WWW-Authenticate as scheme (lowercased) + auth-params; undefined when absent, scheme '!' when unparsable. */
function challengeOf (res: RawResponse): ParsedChallenge | undefined {
  const value = res.headers['www-authenticate']
  if (value === undefined) return undefined
  const m = /^([A-Za-z]+)(?: +(.*))?$/.exec(value)
  if (m === null) return { scheme: '!', params: { raw: value } }
  const params: Record<string, string> = {}
  let rest = m[2] ?? ''
  const param = /^([A-Za-z_]+)="([^"\\]*)"\s*(?:,\s*|$)/
  while (rest !== '') {
    const p = param.exec(rest)
    if (p === null) return { scheme: '!', params: { raw: value } }
    params[(p[1] ?? '').toLowerCase()] = p[2] ?? ''
    rest = rest.slice(p[0].length)
  }
  return { scheme: (m[1] ?? '').toLowerCase(), params }
}
