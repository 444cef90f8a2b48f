/**
 * `POST /_keygate/v1/leaked` on the data plane: leaked keys reported by anyone, without
 * a credential, over raw sockets against real Redis (docs/leaks.md#reports-from-anyone).
 *
 * - every input is answered 202 with an empty body: none, garbage, the wrong shape,
 *   1,001 strings, a body past 128 KiB (not read: the connection closes), no content
 *   type; none of them changes a key;
 * - a live key reported on one instance is refused by two instances within a second,
 *   revoked with `leak_source public-report`, audited as `scanner:public`, its audit
 *   entry the webhook event `key.leaked`;
 * - a string whose checksum fails (a random one, or a real key with one character
 *   changed) costs no Redis command: MONITOR on the test's own redis-server sees only
 *   the lookup of a well-formed key sent after them;
 * - past `leaks.public.per_address` a report is answered the same and does nothing,
 *   while another address's report goes on.
 */
import t, { type Test } from 'tap'
import { generateKey } from '../../../src/registry/key-format.js'
import { eventsOfEntry } from '../../../src/webhooks/audit-events.js'
import type { WebhookEvent } from '../../../src/webhooks/events.js'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawRequest, req, type RawResponse } from '../../helpers/raw-http.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'
import { startPrivateRedis } from '../../helpers/redis.js'

const PATH = '/_keygate/v1/leaked'

/** the `key.leaked` webhook events the audit trail holds (src/webhooks/audit-events.ts) */
async function leakedEvents (gw: TestGateway): Promise<WebhookEvent[]> {
  const stream = gw.fixtures.keys.audit
  return (await gw.client.xrange(stream, '-', '+'))
    .flatMap(([id, fields]) => eventsOfEntry(stream, id, fields)).filter((e) => e.type === 'key.leaked')
}

async function report (gw: TestGateway, body: string | undefined, headers: Record<string, string> = {}): Promise<RawResponse> {
  return await gw.send('POST', PATH, { 'Content-Type': 'application/json', ...headers }, body)
}

function accepted (t: Test, res: RawResponse, what: string): void {
  t.equal(res.status, 202, `${what}: 202`)
  t.equal(res.body, '', `${what}: an empty body`)
  t.equal(res.headers['content-type'], undefined, `${what}: no content type`)
}

t.test('every input is answered 202, empty, and changes nothing but a live key', async (t) => {
  const gw = await startGateway(t, { yaml: 'leaks: { public: { per_address: "100/1m" } }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const bob = await gw.fixtures.personalKey('bob')
  const typo = alice.key.slice(0, -1) + (alice.key.endsWith('A') ? 'B' : 'A')
  const huge = JSON.stringify({ keys: [bob.key, 'x'.repeat(140 * 1024)] })
  const inputs: Array<[string, string | undefined, Record<string, string>]> = [
    ['no body', undefined, {}],
    ['an empty body', '', {}],
    ['not JSON', '{"keys":[', {}],
    ['JSON, not an object', `["${bob.key}"]`, {}],
    ['keys not a list', `{"keys":"${bob.key}"}`, {}],
    ['a key with a wrong checksum', JSON.stringify({ keys: [typo] }), {}],
    ['1,001 strings', JSON.stringify({ keys: [bob.key, ...Array.from({ length: 1000 }, (_, i) => `kg_${i}`)] }), {}],
    ['a body past 128 KiB', huge, {}],
    ['binary garbage', '\u0000\u00ff\u0001', { 'Content-Type': 'application/octet-stream' }],
    ['no content type', JSON.stringify({ keys: ['kg_nothing'] }), { 'Content-Type': '' }]
  ]
  for (const [what, body, headers] of inputs) {
    const hs = headers['Content-Type'] === '' ? {} : headers
    const res = body === undefined || headers['Content-Type'] === ''
      ? await gw.send('POST', PATH, hs, body)
      : await report(gw, body, headers)
    accepted(t, res, what)
    t.match(await gw.logOf(res), { status: 202, reason: 'leak_report', path: PATH }, `${what}: its log line`)
    if (what === 'a body past 128 KiB') t.ok(res.closed, 'the body left unread, the connection closes')
  }
  const declared = await rawRequest(gw.port, req('POST', PATH, { 'Content-Length': String(10 * 1024 * 1024) }, ''))
  accepted(t, declared, 'a declared Content-Length of 10 MiB, nothing sent')

  // a live key after all of those: the queue went on in order, so theirs are done
  accepted(t, await report(gw, JSON.stringify({ keys: [alice.key, alice.key, 'kg_x'] })), 'a live key')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', alice.key)).status === 401, 2000) >= 0, 'the key is refused')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(bob.id), 'status'), 'active', 'no ignored report revoked anything')
  t.match(await gw.client.hgetall(gw.fixtures.keys.key(alice.id)), {
    status: 'revoked', revoked_reason: 'leaked', leak_source: 'public-report'
  })
  const events = await leakedEvents(gw)
  t.match(events, [{ type: 'key.leaked', data: { key_id: alice.id, leak_source: 'public-report', actor: 'scanner:public' } }])
  t.equal(events.length, 1, 'one event: the key twice in a report is looked up once')
  const audit = await gw.client.xrange(gw.fixtures.keys.audit, '-', '+')
  const leaked = audit.map(([, fields]) => fields.join(' ')).filter((f) => f.includes('key.leaked'))
  t.equal(leaked.length, 1, 'one audit entry')
  t.match(leaked[0], /scanner:public/)

  accepted(t, await report(gw, JSON.stringify({ keys: [alice.key] })), 'a key revoked already')
  for (const k of [alice, bob]) t.notOk(gw.rawLogs.some((l) => l.includes(k.key.slice(20))), 'no log line holds a key')
})

t.test('a live key reported on one instance is refused on two within a second', async (t) => {
  const one = await startGateway(t)
  const two = await startGateway(t, { redis: one.redis, prefix: one.prefix, seed: false })
  const carol = await one.fixtures.personalKey('carol')
  for (const gw of [one, two]) t.equal((await gw.get('/api/v1/orgs/globex/x', carol.key)).status, 200, 'cached, allowed')
  const sent = Date.now()
  accepted(t, await report(one, JSON.stringify({ keys: [carol.key] })), 'the report')
  for (const gw of [one, two]) {
    const after = await eventually(async () => (await gw.get('/api/v1/orgs/globex/x', carol.key)).status === 401, 1000, 10)
    t.ok(after >= 0, `refused on instance ${gw === one ? 'one' : 'two'} within 1 s of the answer (${Date.now() - sent} ms)`)
  }
})

t.test('a string whose checksum fails costs no Redis command', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const gw = await startGateway(t, { redis })
  const alice = await gw.fixtures.personalKey('alice')
  const typo = alice.key.slice(0, -1) + (alice.key.endsWith('A') ? 'B' : 'A')
  const random = Array.from({ length: 200 }, () => {
    const k = generateKey('kg_').key
    return k.slice(0, -1) + (k.endsWith('z') ? 'y' : 'z')
  })
  // sent after: a well-formed key nobody holds and a live one; once the live one is revoked
  // (the reports are handled in order), the first report's lookups would have been made
  const control = generateKey('kg_')
  const bob = await gw.fixtures.personalKey('bob')
  const { commands } = await watchGatewayRedis(gw, async () => {
    accepted(t, await report(gw, JSON.stringify({ keys: [typo, ...random, 'kg_short', 'not a key'] })), 'garbage')
    accepted(t, await report(gw, JSON.stringify({ keys: [control.key, bob.key] })), 'well-formed keys')
    const revoked = async (): Promise<boolean> => await gw.client.hget(gw.fixtures.keys.key(bob.id), 'status') === 'revoked'
    t.ok(await eventually(revoked, 2000) >= 0, 'the live key is revoked')
  })
  const lookups = commands.filter((c) => /^hget /i.test(c))
  t.same(lookups.sort(), [control.id, bob.id].map((id) => `hget ${gw.fixtures.keys.key(id)} hash`).sort(),
    'the only lookups are the well-formed keys\'')
  t.notOk(commands.some((c) => c.includes(alice.id)), 'the real key with a wrong checksum was never named')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(alice.id), 'status'), 'active', 'and is not revoked')
})

t.test('past the per-address limit a report is answered the same and does nothing', async (t) => {
  const gw = await startGateway(t, {
    yaml: 'trusted_proxies: ["127.0.0.1/32"]\nleaks: { public: { per_address: "2/1m" } }\n'
  })
  const alice = await gw.fixtures.personalKey('alice')
  const bob = await gw.fixtures.personalKey('bob')
  const a = { 'X-Forwarded-For': '203.0.113.7' }
  for (let i = 0; i < 2; i++) accepted(t, await report(gw, '{"keys":[]}', a), `report ${i + 1} of address A`)
  const limited = await report(gw, JSON.stringify({ keys: [alice.key] }), a)
  accepted(t, limited, 'report 3 of address A')
  t.match(await gw.logOf(limited), { reason: 'leak_report_limited', status: 202 })
  // another address's report, queued after: once its key is revoked, A's would have been too
  accepted(t, await report(gw, JSON.stringify({ keys: [bob.key] }), { 'X-Forwarded-For': '198.51.100.9' }), 'address B')
  t.ok(await eventually(async () => await gw.client.hget(gw.fixtures.keys.key(bob.id), 'status') === 'revoked', 2000) >= 0)
  t.equal(await gw.client.hget(gw.fixtures.keys.key(alice.id), 'status'), 'active', "A's third report did nothing")
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
})

t.test('leaks.public.enabled false: the path is no route of the gateway', async (t) => {
  const gw = await startGateway(t, { yaml: 'leaks: { public: { enabled: false } }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const res = await report(gw, JSON.stringify({ keys: [alice.key] }))
  t.equal(res.status, 404, 'under no route prefix: 404')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(alice.id), 'status'), 'active')
})

t.test('a test key is reported and revoked alike, its event saying so', async (t) => {
  const gw = await startGateway(t)
  const { result: testKey } = await gw.fixtures.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', env: 'test' })
  t.match(testKey.key, /^kgt_/)
  accepted(t, await report(gw, JSON.stringify({ keys: [testKey.key] })), 'a test key')
  t.ok(await eventually(async () => (await leakedEvents(gw)).length === 1, 2000) >= 0, 'its event is key.leaked')
  t.match((await leakedEvents(gw))[0], { type: 'key.leaked', data: { key_id: testKey.id, env: 'test', actor: 'scanner:public' } })
  t.equal(await gw.client.hget(gw.fixtures.keys.key(testKey.id), 'leak_source'), 'public-report')
})
