/**
 * Routes in front of existing backends (docs/routing.md), on real
 * upstreams over raw sockets: hosts and prefixes (most specific first), strip_prefix and
 * rewrite_prefix against every path-policy attack (the path an upstream receives is the
 * decided one, rewritten), public rules with and without a key, and key_header.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { ACCEPTED_TARGETS, REFUSED_TARGETS } from '../../helpers/path-cases.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'
import { rawValues, startUpstream, type Upstream } from '../../helpers/upstream.js'

const names = ['a', 'b', 'c', 'd'] as const
type Name = typeof names[number] | 'core'
const upstreams = {} as Record<typeof names[number], Upstream>
let gw: TestGateway

t.before(async () => {
  for (const n of names) {
    const u = await startUpstream()
    upstreams[n] = u
    t.teardown(() => u.close())
  }
  gw = await startGateway(t, {
    yaml: `
upstreams:
${names.map((n) => `  ${n}: { url: "${upstreams[n].url}", timeout_ms: 2000 }`).join('\n')}
  core: { url: "http://127.0.0.1:9", timeout_ms: 2000 }
routes:
  - { prefix: /api/v1, upstream: a }
  - { prefix: /shop, upstream: a }
  - { prefix: /shop, upstream: b, hosts: [shop.example.com] }
  - { prefix: /shop, upstream: c, hosts: ["*.example.com"] }
  - { prefix: /shop/admin, upstream: d }
  - { prefix: /v, upstream: a, hosts: [api.example.com], strip_prefix: true }
  - { prefix: /inventory, upstream: b, rewrite_prefix: /v1/inventory }
  - { prefix: /kong, upstream: c, key_header: apikey }
rules:
  - { method: "*", path: /api/v1/*, permissions: [] }
  - { method: "*", path: /shop, permissions: [] }
  - { method: "*", path: /shop/*, permissions: [] }
  - { method: "*", path: /shop/admin/*, permissions: [] }
  - { method: "*", path: /v, permissions: [] }
  - { method: "*", path: /v/*, permissions: [] }
  - { method: "*", path: /inventory, permissions: [] }
  - { method: "*", path: /inventory/*, permissions: [] }
  - { method: GET, path: /inventory/health, public: true }
  - { method: GET, path: /inventory/docs/*, public: true }
  - { method: "*", path: /kong/*, permissions: [] }
`
  })
})

function upstream (name: Name): Upstream {
  return name === 'core' ? gw.upstream : upstreams[name]
}

/** A raw request; `headers` as name/value pairs, Host included (none given: localhost). */
async function raw (method: string, target: string | Buffer, headers: Array<[string, string]>): Promise<RawResponse> {
  const hasHost = headers.some(([n]) => n.toLowerCase() === 'host')
  const head = [...hasHost ? [] : [['Host', 'localhost']], ...headers, ['Connection', 'close']].map(([n, v]) => `${n}: ${v}\r\n`).join('')
  const line = Buffer.concat([Buffer.from(`${method} `, 'latin1'), typeof target === 'string' ? Buffer.from(target, 'utf8') : target, Buffer.from(' HTTP/1.1\r\n', 'latin1')])
  return await rawRequest(gw.port, Buffer.concat([line, Buffer.from(head + '\r\n', 'latin1')]))
}

/** Sends, and returns the response with the one upstream that got it (undefined: none did). */
async function routed (t: Test, method: string, target: string | Buffer, headers: Array<[string, string]>): Promise<{ res: RawResponse, to: Name | undefined, url: string | undefined }> {
  const before = Object.fromEntries([...names, 'core'].map((n) => [n, upstream(n as Name).requests.length]))
  const res = await raw(method, target, headers)
  const got = ([...names, 'core'] as Name[]).filter((n) => upstream(n).requests.length > (before[n] ?? 0))
  t.ok(got.length <= 1, 'at most one upstream was contacted')
  const to = got[0]
  return { res, to, url: to === undefined ? undefined : upstream(to).last()?.url }
}

t.test('hosts and prefixes: the most specific route wins', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')
  const auth: [string, string] = ['Authorization', `Bearer ${key}`]
  const table: Array<[string, string, string, Name | 404, string?]> = [
    ['any host: the route without hosts', 'other.test', '/shop/x', 'a'],
    ['an exact host', 'shop.example.com', '/shop/x', 'b'],
    ['an exact host, another case and a port', 'SHOP.Example.COM:8080', '/shop/x', 'b'],
    ['an exact host with a trailing dot', 'shop.example.com.', '/shop/x', 'b'],
    ['a wildcard host', 'eu.example.com', '/shop/x', 'c'],
    ['a wildcard host, two labels deep', 'a.b.example.com', '/shop/x', 'c'],
    ['the wildcard does not cover the bare domain', 'example.com', '/shop/x', 'a'],
    ['the prefix itself, exact host', 'shop.example.com', '/shop', 'b'],
    ['the longest prefix beats a host', 'shop.example.com', '/shop/admin/x', 'd'],
    ['the longest prefix, any host', 'other.test', '/shop/admin', 'd'],
    ['a prefix is matched segment-wise', 'shop.example.com', '/shopping', 404],
    ['a host-only route for its host (stripped)', 'api.example.com', '/v/items', 'a', '/items'],
    ['a host-only route for another host', 'other.test', '/v/items', 404],
    ['a host-only route without a name in Host', '[::1]:8080', '/v/items', 404],
    ['a path under no route', 'shop.example.com', '/nothing', 404]
  ]
  for (const [what, host, path, want, forwarded] of table) {
    await t.test(`${what}: ${host} ${path}`, async (t) => {
      const { res, to, url } = await routed(t, 'GET', path, [['Host', host], auth])
      if (want === 404) {
        t.equal(res.status, 404, '404 not_found')
        t.equal(to, undefined, 'no upstream contacted')
        return
      }
      t.equal(res.status, 200, 'forwarded')
      t.equal(to, want, `to upstream ${want}`)
      t.equal(url, forwarded ?? path, 'the path forwarded')
    })
  }
})

/** The target under another prefix (`/api/v1` -> `prefix`), for strings and bytes alike. */
function under (prefix: string, target: string | Buffer): string | Buffer {
  if (typeof target === 'string') return target.startsWith('/api/v1') ? prefix + target.slice(7) : target
  const s = target.toString('latin1')
  return Buffer.from(s.startsWith('/api/v1') ? prefix + s.slice(7) : s, 'latin1')
}

const REWRITES: Array<[string, string, string, Name, (forwarded: string) => string]> = [
  ['rewrite_prefix /inventory -> /v1/inventory', '/inventory', 'localhost', 'b', (f) => '/v1/inventory' + f.slice(7)],
  ['strip_prefix /v', '/v', 'api.example.com', 'a', (f) => f.slice(7).startsWith('/') ? f.slice(7) : '/' + f.slice(7)]
]

t.test('strip and rewrite: every refused target is refused, never forwarded', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')
  for (const [what, prefix, host] of REWRITES) {
    for (const [name, method, target] of REFUSED_TARGETS) {
      const sent = under(prefix, target)
      await t.test(`${what}, ${name}: ${JSON.stringify(sent.toString())}`, async (t) => {
        const { res, to } = await routed(t, method, sent, [['Host', host], ['Authorization', `Bearer ${key}`]])
        t.equal(res.status, 400, '400 bad_request')
        t.equal(to, undefined, 'no upstream contacted')
      })
    }
  }
})

t.test('strip and rewrite: the upstream receives the decided path, rewritten', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')
  for (const [what, prefix, host, to, rewrite] of REWRITES) {
    const cases: Array<[string, string, string]> = [
      ...ACCEPTED_TARGETS.filter(([, target]) => target.startsWith('/api/v1')).map(([n, target, f]) => [n, under(prefix, target) as string, rewrite(f)] as [string, string, string]),
      ['an encoded unreserved letter in the prefix', `${prefix.slice(0, -1)}%${prefix.charCodeAt(prefix.length - 1).toString(16)}/x`, rewrite('/api/v1/x')],
      ['the prefix itself', prefix, rewrite('/api/v1')],
      ['the prefix with a trailing slash', `${prefix}/`, rewrite('/api/v1/')],
      ['the prefix itself with a query', `${prefix}?a=1`, rewrite('/api/v1') + '?a=1']
    ]
    for (const [name, target, forwarded] of cases) {
      await t.test(`${what}, ${name}: ${target}`, async (t) => {
        const r = await routed(t, 'GET', target, [['Host', host], ['Authorization', `Bearer ${key}`]])
        t.equal(r.res.status, 200, 'forwarded')
        t.equal(r.to, to, `to upstream ${to}`)
        t.equal(r.url, forwarded, 'exactly the decided path, rewritten')
      })
    }
  }
})

t.test('public rules', async (t) => {
  const { key, id: keyId } = await gw.fixtures.botKey('admin', 'acme')

  await t.test('no key: forwarded anonymously, without Redis, identity headers stripped', async (t) => {
    const spoofed: Array<[string, string]> = [['X-Auth-User-Id', 'admin'], ['X-Auth-Anonymous', 'false'], ['X_Auth_Role', 'admin'], ['x-auth-key-id', 'k1']]
    const { result, commands } = await watchGatewayRedis(gw, async () => await routed(t, 'GET', '/inventory/health', spoofed))
    const { res, to, url } = result
    t.equal(res.status, 200, 'forwarded')
    t.equal(to, 'b')
    t.equal(url, '/v1/inventory/health', 'rewritten as any request')
    t.same(commands, [], 'no Redis command')
    const got = upstreams.b.last()
    t.same(rawValues(got, 'x-auth-anonymous'), ['true'], 'X-Auth-Anonymous: true, once')
    for (const name of ['x-auth-user-id', 'x-auth-role', 'x_auth_role', 'x-auth-key-id', 'x-auth-org-id']) t.same(rawValues(got, name), [], `no ${name}`)
    const line = await gw.logOf(res)
    t.equal(line?.reason, 'public', 'the log line says public')
    t.equal(line?.key_id, undefined, 'no key id')
  })

  await t.test('a public rule with a wildcard', async (t) => {
    const { res, url } = await routed(t, 'GET', '/inventory/docs/index.html', [])
    t.equal(res.status, 200)
    t.equal(url, '/v1/inventory/docs/index.html')
  })

  await t.test('a valid key on a public path: decided normally, its identity forwarded', async (t) => {
    const { res } = await routed(t, 'GET', '/inventory/health', [['Authorization', `Bearer ${key}`]])
    t.equal(res.status, 200)
    const got = upstreams.b.last()
    t.same(rawValues(got, 'x-auth-key-id'), [keyId], 'the key id')
    t.same(rawValues(got, 'x-auth-anonymous'), [], 'not anonymous')
    t.equal((await gw.logOf(res))?.reason, 'allowed')
  })

  await t.test('a refused key on a public path is refused, not hidden', async (t) => {
    const revoked = await gw.fixtures.botKey('admin', 'acme')
    await gw.client.hset(`${gw.prefix}key:${revoked.id}`, 'status', 'revoked')
    for (const authorization of [`Bearer ${revoked.key}`, 'Bearer not-a-key', 'Basic YWxpY2U6c2VjcmV0']) {
      const { res, to } = await routed(t, 'GET', '/inventory/health', [['Authorization', authorization]])
      t.equal(res.status, 401, `${authorization.split(' ')[0] ?? ''}: 401`)
      t.equal(to, undefined, 'not forwarded')
    }
  })

  await t.test('everything not public stays default deny', async (t) => {
    for (const [method, path] of [['POST', '/inventory/health'], ['GET', '/inventory/items'], ['GET', '/inventory/healthz'], ['GET', '/inventory/docs']]) {
      const { res, to } = await routed(t, method as string, path as string, [])
      t.equal(res.status, 401, `${method as string} ${path as string}: 401`)
      t.equal(to, undefined, 'not forwarded')
    }
  })
})

t.test('key_header', async (t) => {
  const { key, id: keyId } = await gw.fixtures.botKey('admin', 'acme')

  await t.test('the key in the route\'s key header: allowed, the header never forwarded', async (t) => {
    for (const name of ['apikey', 'ApiKey', 'APIKEY']) {
      const { res, to } = await routed(t, 'GET', '/kong/items', [[name, key]])
      t.equal(res.status, 200, `${name}: forwarded`)
      t.equal(to, 'c')
      const got = upstreams.c.last()
      t.same(rawValues(got, 'apikey'), [], 'no apikey header upstream')
      t.same(rawValues(got, 'x-auth-key-id'), [keyId], 'the identity headers')
      t.notOk(JSON.stringify(got?.rawHeaders).includes(key), 'the key is nowhere upstream')
    }
  })

  await t.test('Authorization still works on that route', async (t) => {
    const { res, to } = await routed(t, 'GET', '/kong/items', [['Authorization', `Bearer ${key}`]])
    t.equal(res.status, 200)
    t.equal(to, 'c')
  })

  await t.test('both credentials: 401, not forwarded', async (t) => {
    const { res, to } = await routed(t, 'GET', '/kong/items', [['Authorization', `Bearer ${key}`], ['apikey', key]])
    t.equal(res.status, 401)
    t.equal(to, undefined)
    t.equal((await gw.logOf(res))?.reason, 'two_credentials')
  })

  await t.test('two key headers, or a malformed one: 401', async (t) => {
    for (const headers of [[['apikey', key], ['apikey', key]], [['apikey', `Bearer ${key}`]], [['apikey', '']]] as Array<Array<[string, string]>>) {
      const { res, to } = await routed(t, 'GET', '/kong/items', headers)
      t.equal(res.status, 401)
      t.equal(to, undefined)
    }
  })

  await t.test('a key in the query string is ignored', async (t) => {
    const { res, to } = await routed(t, 'GET', `/kong/items?apikey=${key}&api_key=${key}&key=${key}`, [])
    t.equal(res.status, 401)
    t.equal(to, undefined)
    t.equal((await gw.logOf(res))?.reason, 'missing_credential')
  })

  await t.test('the key header on a route without one is not a credential', async (t) => {
    const { res, to } = await routed(t, 'GET', '/shop/x', [['apikey', key]])
    t.equal(res.status, 401)
    t.equal(to, undefined)
  })

  await t.test('the key never reaches a log line', async (t) => {
    const secret = key.slice(key.lastIndexOf('_') + 1)
    t.notOk(gw.rawLogs.some((l) => l.includes(key) || l.includes(secret)), 'no log line holds the key')
  })
})

t.test('rate_limits.anonymous: per client address, 429 over it, keys untouched', async (t) => {
  const limited = await startGateway(t, {
    redis: gw.redis,
    yaml: `
rate_limits: { anonymous: 2/1m }
rules:
  - { method: GET, path: /api/v1/health, public: true }
  - { method: GET, path: /api/v1/*, permissions: [] }
`
  })
  const statuses: number[] = []
  let last: RawResponse | undefined
  for (let i = 0; i < 3; i++) {
    last = await limited.send('GET', '/api/v1/health')
    statuses.push(last.status)
  }
  t.same(statuses, [200, 200, 429], 'two allowed, the third refused')
  t.equal(last?.headers['ratelimit-limit'], '2', 'RateLimit-Limit')
  t.ok(Number(last?.headers['retry-after']) >= 1, 'Retry-After')
  t.equal(limited.upstream.requests.length, 2, 'the refused one never reached the upstream')
  t.equal((await limited.logOf(last as RawResponse))?.reason, 'rate_limited')
  const { key } = await limited.fixtures.botKey('admin', 'acme')
  t.equal((await limited.get('/api/v1/health', key)).status, 200, 'a key is not counted as anonymous')
})
