/**
 * A key about itself under self_service.prefix (docs/self-service.md), over raw sockets
 * to a real gateway on a real Redis, with a route `/` that forwards everything else to a
 * real upstream: whoami, usage, revoke then 401, rotate with and without
 * `keygate:keys:self`, and the prefix (in every spelling the path policy lets through or
 * refuses) never reaching the upstream. A route claiming the prefix is refused.
 */
import t from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawRequest, send, type RawResponse } from '../../helpers/raw-http.js'
import { configProblems } from '../../helpers/config.js'

const YAML = `
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /, upstream: core }
rules:
  - { method: GET,  path: /api/v1/users, permissions: [users:read] }
  - { method: "*",  path: /*,            permissions: [] }
`
const P = '/_keygate/v1'
const json = (res: RawResponse): Record<string, unknown> => JSON.parse(res.body) as Record<string, unknown>
const bearer = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}` })

let gw: TestGateway
t.before(async () => {
  gw = await startGateway(t, { yaml: YAML })
  await gw.fixtures.role('rotator', ['users:read', 'keygate:keys:self'])
})

t.test('whoami: the key, its effective permissions, its rate limit and quota state', async (t) => {
  const bob = await gw.fixtures.personalKey('bob', { expiresInMs: 3_600_000 })
  const res = await gw.get(`${P}/key`, bob.key)
  t.equal(res.status, 200)
  const me = json(res)
  t.match(me, { id: bob.id, type: 'personal', org: 'acme', user: 'bob', role: 'writer', permissions: ['users:*'], rate_limit: null })
  t.ok(typeof me.expires_at === 'string', 'expires_at')
  t.ok(typeof me.quota === 'object' && me.quota !== null, 'quota state')
  t.notOk(JSON.stringify(me).includes(bob.key), 'never the key')
  const line = await gw.logOf(res)
  t.equal(line?.key_id, bob.id, 'logged and counted as a request of the key')
  t.equal(line?.reason, 'allowed')
  t.equal((await gw.get(`${P}/key`)).status, 401, 'no key')
  t.equal((await gw.get(`${P}/key`, 'kg_nonsense')).status, 401, 'malformed')
  t.equal((await gw.get(`${P}/other`)).status, 404, 'another path under the prefix: 404, with or without a key')
  t.equal(gw.upstream.requests.length, 0, 'nothing forwarded')
})

t.test('usage: the last 24 h by the hour', async (t) => {
  const bot = await gw.fixtures.botKey('reader', 'acme')
  const res = await gw.get(`${P}/key/usage`, bot.key)
  t.equal(res.status, 200)
  const points = json(res).points as Array<{ t: string, allowed: number }>
  t.ok(points.length >= 24 && points.length <= 25, `${points.length} points`)
  t.ok(points.every((p) => typeof p.t === 'string' && typeof p.allowed === 'number'))
})

t.test('revoke: a key may always revoke itself; then 401 everywhere', async (t) => {
  const bot = await gw.fixtures.botKey('none', 'acme')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 403, 'no permission at all')
  const res = await send(gw.port, 'POST', `${P}/key/revoke`, bearer(bot.key))
  t.equal(res.status, 200)
  t.same(json(res), { revoked: true })
  let status = 0
  for (let i = 0; i < 50 && status !== 401; i++) {
    status = (await gw.get(`${P}/key`, bot.key)).status
    if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.equal(status, 401, 'revoked')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 401)
  const shown = await gw.fixtures.admin.showKey(bot.id)
  t.equal(shown.status, 'revoked')
})

t.test('rotate: needs keygate:keys:self; the new key once, the old one kept for the grace', async (t) => {
  const plain = await gw.fixtures.botKey('reader', 'acme')
  const refused = await send(gw.port, 'POST', `${P}/key/rotate`, bearer(plain.key))
  t.equal(refused.status, 403)
  t.match(refused.headers['www-authenticate'], /keygate:keys:self/)

  const bot = await gw.fixtures.botKey('rotator', 'acme')
  const bad = await send(gw.port, 'POST', `${P}/key/rotate`, { ...bearer(bot.key), 'Content-Type': 'application/json' }, '{"grace":"forever"}')
  t.equal(bad.status, 400)
  t.same((json(bad).error as { details: unknown }).details, [{ field: 'grace', reason: 'expected a duration like 24h, at most 30d' }])

  const res = await send(gw.port, 'POST', `${P}/key/rotate`, { ...bearer(bot.key), 'Content-Type': 'application/json' }, '{"grace":"1h"}')
  t.equal(res.status, 201)
  const rotated = json(res) as { id: string, key: string, replaces: string, replaces_expires_at: string }
  t.equal(rotated.replaces, bot.id)
  t.ok(rotated.key.startsWith('kg_') && rotated.id !== bot.id, 'a new key, shown once')
  const graceMs = Date.parse(rotated.replaces_expires_at) - Date.now()
  t.ok(graceMs > 3_500_000 && graceMs <= 3_600_000, 'the old key kept for the grace')
  t.equal((await gw.get('/api/v1/users', rotated.key)).status, 200, 'the new key works')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 200, 'the old one too, for now')
  t.equal(json(await gw.get(`${P}/key`, rotated.key)).role, 'rotator')

  const noBody = await send(gw.port, 'POST', `${P}/key/rotate`, bearer(rotated.key))
  t.equal(noBody.status, 201, 'no body: the default grace')
})

t.test('the prefix never reaches the upstream, in any spelling', async (t) => {
  const bot = await gw.fixtures.botKey('rotator', 'acme')
  const before = gw.upstream.requests.length
  const targets = [
    `${P}/key`, `${P}/key/`, `${P}/other`, P, `${P}/`, `${P}/key?x=1`, `${P}/key/usage/more`,
    '/%5Fkeygate/v1/key', '/%5fkeygate/v1/other', '/_keygate/%76%31/key', '/_keygate/v1/%6Bey',
    '/_keygate%2Fv1/key', '/_keygate/v1%2Fkey', '/_keygate%2fv1%2fkey', '/_keygate/v1%5Ckey',
    '/_keygate/./v1/key', '/_keygate/v1/./key', '/x/../_keygate/v1/key', '/_keygate/v1/%2e%2e/v1/key',
    '//_keygate/v1/key', '/_keygate//v1/key', '/_keygate/v1//key', '/_keygate/v1/key;x',
    '/_keygate/v1/key%00'
  ]
  for (const target of targets) {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await rawRequest(gw.port, `${method} ${target} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${bot.key}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
      t.ok([200, 201, 400, 404].includes(res.status), `${method} ${target}: ${res.status}`)
    }
  }
  // a WebSocket upgrade is decided outside the data plane's routes: the route table holds no path under the prefix
  for (const target of [`${P}/key`, `${P}/other`, '/%5Fkeygate/v1/key']) {
    const res = await rawRequest(gw.port, `GET ${target} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${bot.key}\r\n` +
      'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n')
    t.equal(res.status, 404, `upgrade ${target}: 404`)
  }
  t.equal(gw.upstream.requests.length, before, 'the upstream saw none of them')
  t.equal((await gw.get('/elsewhere', bot.key)).status, 200, 'while any other path is forwarded')
  t.equal(gw.upstream.requests.length, before + 1)
})

t.test('a route claiming the prefix is refused', async (t) => {
  for (const prefix of ['/_keygate', '/_keygate/v1', '/_keygate/v1/key']) {
    const problems = configProblems(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
routes: [{ prefix: ${prefix}, upstream: core }]
`)
    t.ok(problems.some((p) => p.includes('claims the self-service prefix')), prefix)
  }
  t.same(configProblems(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
routes: [{ prefix: /, upstream: core }, { prefix: /_keygate2, upstream: core }]
`).filter((p) => p.includes('self-service')), [], '/ and a neighbour are not claims')
  t.same(configProblems(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
routes: [{ prefix: /_keygate, upstream: core }]
self_service: { enabled: false }
`).filter((p) => p.includes('self-service')), [], 'self-service off: nothing to claim')
})
