/**
 * GitHub's secret scanning reports, end to end: a P-256 key pair made here stands in
 * for GitHub's, its public key served in GitHub's key-list format by a local HTTP
 * server; two gateway instances share one Redis and the key list.
 *
 * - a signed report revokes the live key (reason, source, one audit entry), both
 *   instances refuse it within 1 s, its WebSocket closes with 1008, and the answer is
 *   GitHub's feedback array, labels in order;
 * - replayed: the same answer, nothing changed twice;
 * - a foreign token that is an imported key's plaintext (GitHub matches keygate's
 *   pattern only, but a report may hold one) is revoked alike and labelled true_positive;
 * - tampered, unknown identifier, missing signature, oversized, too many tokens:
 *   refused, nothing changed; an unknown identifier fetches the list at most once a minute.
 */
import t, { type Test } from 'tap'
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { openClient } from '../../helpers/ws-client.js'
import { startWsUpstream } from '../../helpers/ws-upstream.js'

const HOOK = '/hooks/github/secret-scanning'
const TOKEN = 'leaks-admin-token-0123456789abcdef'
const KEY_ID = 'bcb53661c06b4728e59d897fb6165d5c9cda0fd9cdf9d09ead458168deb7518c'

interface GithubStandIn { url: string, privateKey: KeyObject, fetches: () => number }

/** GitHub's key list, served from a key pair of our own (and a second, unlisted one for forgeries). */
async function githubKeys (t: Test, privateKey: KeyObject, publicPem: string): Promise<GithubStandIn> {
  let fetches = 0
  const server: Server = createServer((_req, res) => {
    fetches++
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ public_keys: [{ key_identifier: KEY_ID, key: publicPem, is_current: true }] }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/meta/public_keys/secret_scanning`, privateKey, fetches: () => fetches }
}

function signed (privateKey: KeyObject, body: string, identifier = KEY_ID): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'Github-Public-Key-Identifier': identifier,
    'Github-Public-Key-Signature': sign('sha256', Buffer.from(body), { key: privateKey, dsaEncoding: 'der' }).toString('base64')
  }
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

async function world (t: Test, yaml = ''): Promise<{ gws: TestGateway[], github: GithubStandIn, other: KeyObject }> {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const github = await githubKeys(t, pair.privateKey, pair.publicKey.export({ type: 'spki', format: 'pem' }) as string)
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gws: TestGateway[] = []
  for (let i = 0; i < 2; i++) {
    gws.push(await startGateway(t, {
      redis,
      prefix,
      seed: i === 0,
      yaml: `leaks: { github: { keys_url: "${github.url}" } }\n${yaml}`,
      env: { KEYGATE_ADMIN_TOKEN: TOKEN },
      configure: (c) => { (c.upstreams.core as { url: string }).url = up.url }
    }))
  }
  return { gws, github, other: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey }
}

async function auditActions (gw: TestGateway): Promise<Array<Record<string, string>>> {
  const entries = await gw.client.xrange(gw.fixtures.keys.audit, '-', '+')
  return entries.map(([, fields]) => {
    const o: Record<string, string> = {}
    for (let i = 0; i + 1 < fields.length; i += 2) o[fields[i] as string] = fields[i + 1] as string
    return o
  })
}

t.test('a signed report revokes the live key everywhere, closes its WebSocket, and answers with the labels', async (t) => {
  const { gws, github } = await world(t)
  const [a, b] = gws as [TestGateway, TestGateway]
  const leaked = await a.fixtures.personalKey('alice')
  const bystander = await a.fixtures.personalKey('bob')
  for (const gw of gws) t.equal((await gw.get('/api/v1/users', leaked.key)).status, 200, 'the key works (and is cached) on each instance')
  const ws = await openClient(a.port, '/api/v1/users', { key: leaked.key })
  t.teardown(() => ws.socket.terminate())
  ws.socket.send('hello')
  t.equal((await ws.next()).data.toString(), 'hello', 'a WebSocket on the key is open')

  // a keygate-shaped token with a valid checksum but another secret: not this key
  const forged = leaked.key.slice(0, 20) + (leaked.key[20] === 'a' ? 'b' : 'a') + leaked.key.slice(21)
  const tokens = [
    { token: leaked.key, type: 'keygate_api_key', url: 'https://github.com/acme/app/blob/abc/.env', source: 'content' },
    { token: 'kg_nothingLikeAKey', type: 'keygate_api_key', url: 'https://github.com/acme/app/blob/abc/a.txt', source: 'content' },
    { token: forged, type: 'keygate_api_key', url: 'https://gist.github.com/x', source: 'gist' }
  ]
  const body = JSON.stringify(tokens)
  const sent = Date.now()
  const res = await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, body), body)
  t.equal(res.status, 200)
  t.same(res.json(), [
    { token_hash: sha256(leaked.key), token_type: 'keygate_api_key', label: 'true_positive' },
    { token_hash: sha256('kg_nothingLikeAKey'), token_type: 'keygate_api_key', label: 'false_positive' },
    { token_hash: sha256(forged), token_type: 'keygate_api_key', label: 'false_positive' }
  ], "GitHub's feedback array, one entry per token, in order")
  t.notOk(res.body.includes(leaked.id), 'nothing about the key beyond its label (not even its id)')

  for (const [i, gw] of gws.entries()) {
    const ms = await eventually(async () => (await gw.get('/api/v1/users', leaked.key)).status === 401, 1000, 10)
    t.ok(ms >= 0, `instance ${i + 1} refuses the leaked key within 1 s of the answer (${Date.now() - sent} ms after the report)`)
  }
  t.equal((await b.get('/api/v1/users', bystander.key)).status, 200, 'another key is untouched')
  const closed = await Promise.race([ws.closed, sleep(1000).then(() => undefined)])
  t.equal(closed?.code, 1008, 'the WebSocket on the leaked key is closed with 1008 within 1 s')

  const record = await a.client.hgetall(a.fixtures.keys.key(leaked.id))
  t.match(record, { status: 'revoked', revoked_reason: 'leaked', leak_source: 'https://github.com/acme/app/blob/abc/.env' })
  t.match(record.revoked_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  const leakedEntries = (await auditActions(a)).filter((e) => e.action === 'key.leaked')
  t.equal(leakedEntries.length, 1, 'one audit entry key.leaked')
  t.match(leakedEntries[0], { actor: 'scanner:github', target: `key:${leaked.id}`, result: 'ok', org: 'acme' })
  t.match(JSON.parse(leakedEntries[0]?.detail ?? '{}'), { from: 'active', leak_source: 'https://github.com/acme/app/blob/abc/.env', env: 'live' }, 'the audit entry names the key\'s environment')

  await t.test('the owner sees why: the admin API key view', async (t) => {
    const view = await send(a.adminPort, 'GET', `/admin/v1/keys/${leaked.id}`, { Authorization: `Bearer ${TOKEN}` })
    t.equal(view.status, 200)
    t.match(view.json(), { id: leaked.id, status: 'revoked', revoked_reason: 'leaked', leak_source: 'https://github.com/acme/app/blob/abc/.env' })
  })

  await t.test('replayed: the same answer, nothing changed twice', async (t) => {
    const again = await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, body), body)
    t.equal(again.status, 200)
    t.same(again.json(), res.json(), 'the same labels')
    t.same(await a.client.hgetall(a.fixtures.keys.key(leaked.id)), record, 'the record is unchanged (revoked_at too)')
    t.equal((await auditActions(a)).filter((e) => e.action === 'key.leaked').length, 1, 'still one audit entry')
  })
})

t.test('refused reports change nothing', async (t) => {
  const { gws, github, other } = await world(t)
  const [a] = gws as [TestGateway]
  const live = await a.fixtures.personalKey('alice')
  const body = JSON.stringify([{ token: live.key, type: 'keygate_api_key', url: 'https://github.com/x', source: 'content' }])
  const stillLive = async (what: string): Promise<void> => {
    t.equal(await a.client.hget(a.fixtures.keys.key(live.id), 'status'), 'active', `${what}: the key is still active`)
    t.equal((await auditActions(a)).filter((e) => e.action === 'key.leaked').length, 0, `${what}: no audit entry`)
  }

  const tampered = body.replace('https://github.com/x', 'https://github.com/y')
  t.equal((await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, body), tampered)).status, 401, 'a body other than the one signed: 401')
  await stillLive('tampered')

  const forged = await send(a.adminPort, 'POST', HOOK, signed(other, body), body)
  t.equal(forged.status, 401, 'signed by another key under GitHub\'s identifier: 401')
  await stillLive('another key')

  const fetchesBefore = github.fetches()
  for (const id of ['ffff', 'eeee', 'dddd']) {
    t.equal((await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, body, id), body)).status, 401, `unknown identifier ${id}: 401`)
  }
  t.ok(github.fetches() - fetchesBefore <= 1, `three unknown identifiers within a minute fetched the list at most once (${github.fetches() - fetchesBefore})`)
  await stillLive('unknown identifier')

  const { 'Github-Public-Key-Signature': _sig, ...noSignature } = signed(github.privateKey, body)
  t.equal((await send(a.adminPort, 'POST', HOOK, noSignature, body)).status, 401, 'no signature: 401')
  t.equal((await send(a.adminPort, 'POST', HOOK, { ...noSignature, 'Github-Public-Key-Signature': 'not base64!' }, body)).status, 401, 'a signature that is no base64: 401')
  await stillLive('no signature')

  const padded = JSON.stringify([{ token: live.key, type: 'keygate_api_key', url: 'https://github.com/x', source: 'x'.repeat(1024 * 1024) }])
  t.equal((await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, padded), padded)).status, 413, 'a body over 1 MiB, even signed: 413')
  await stillLive('oversized')

  const many = JSON.stringify(Array.from({ length: 1001 }, () => ({ token: live.key, type: 'keygate_api_key', url: 'https://github.com/x', source: 'content' })))
  t.equal((await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, many), many)).status, 400, 'more than 1,000 tokens, even signed: 400')
  const notArray = JSON.stringify({ token: live.key })
  t.equal((await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, notArray), notArray)).status, 400, 'not an array: 400')
  await stillLive('malformed')

  t.equal((await a.get('/api/v1/users', live.key)).status, 200, 'the key still works')
  t.notOk(a.rawLogs.some((l) => l.includes(live.key.slice(20))), 'no log line holds the key')
})

t.test('a foreign token that is an imported key is revoked alike and labelled true_positive', async (t) => {
  const { gws, github } = await world(t, 'keys: { accept_imported: true }\n')
  const [a, b] = gws as [TestGateway, TestGateway]
  const foreign = randomBytes(16).toString('hex')
  const imported = await send(a.adminPort, 'POST', '/admin/v1/keys/import', { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, JSON.stringify([{ type: 'personal', user: 'alice', key: foreign }]))
  t.equal(imported.status, 201, imported.body)
  const id = (imported.json() as { keys: Array<{ id: string }> }).keys[0]?.id as string
  t.equal((await b.get('/api/v1/users', foreign)).status, 200, 'the imported key works')

  const body = JSON.stringify([
    { token: foreign, type: 'keygate_api_key', url: 'https://github.com/acme/app/blob/abc/legacy.env', source: 'content' },
    { token: randomBytes(16).toString('hex'), type: 'keygate_api_key', url: 'https://github.com/acme/app/blob/abc/other.env', source: 'content' }
  ])
  const res = await send(a.adminPort, 'POST', HOOK, signed(github.privateKey, body), body)
  t.equal(res.status, 200)
  t.same((res.json() as Array<{ label: string }>).map((r) => r.label), ['true_positive', 'false_positive'], 'the imported key is a true positive, a random token is not')
  t.equal((res.json() as Array<{ token_hash: string }>)[0]?.token_hash, sha256(foreign))
  t.notOk(res.body.includes(id), 'nothing about the key beyond its label')
  for (const [i, gw] of gws.entries()) t.ok(await eventually(async () => (await gw.get('/api/v1/users', foreign)).status === 401, 1000, 10) >= 0, `instance ${i + 1} refuses it`)
  t.match(await a.client.hgetall(a.fixtures.keys.key(id)), { status: 'revoked', revoked_reason: 'leaked', leak_source: 'https://github.com/acme/app/blob/abc/legacy.env' })
  t.match((await auditActions(a)).filter((e) => e.action === 'key.leaked'), [{ actor: 'scanner:github', target: `key:${id}` }])
})
