/**
 * Leak reports find imported keys (docs/leaks.md, docs/imports.md): a reported token
 * that is the plaintext of an imported key (`imported:<sha256 of the token>`) is revoked
 * like a keygate key, against real Redis, the real gateway and the real executable.
 *
 * - the admin API: the imported key is revoked (reason, source, one `key.leaked`), the
 *   gateway refuses it, and its open WebSocket closes with 1008;
 * - the CLI: `keygate keys leaked` revokes an imported key from a file;
 * - with keys.accept_imported off, a reported imported key is revoked all the same;
 * - an org admin's report: every key of its org, a broader one too; another org's imported
 *   key is a false positive, not revoked, and its id (which its token does not hold)
 *   is told nowhere: not in the answer, not in the audit trail.
 */
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { openClient } from '../../helpers/ws-client.js'
import { startWsUpstream } from '../../helpers/ws-upstream.js'

const TOKEN = 'leaked-import-token-0123456789abcdef'
const ON = 'keys: { accept_imported: true }\n'
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')
const foreignKey = (): string => randomBytes(16).toString('hex')

async function importKeys (gw: TestGateway, records: unknown[]): Promise<string[]> {
  const res = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, records)
  if (res.status !== 201) throw new Error(`import: ${res.status} ${res.body}`)
  return (res.json() as { keys: Array<{ id: string }> }).keys.map((k) => k.id)
}

t.test('the admin API: an imported key reported leaked is revoked, refused and its WebSocket closed', async (t) => {
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gw = await startGateway(t, { yaml: ON, env: { KEYGATE_ADMIN_TOKEN: TOKEN }, configure: (c) => { (c.upstreams.core as { url: string }).url = up.url } })
  const kong = foreignKey()
  const unkey = `uk_${foreignKey()}`
  const bystander = foreignKey()
  const [kongId, unkeyId] = await importKeys(gw, [
    { type: 'personal', user: 'alice', key: kong },
    { type: 'bot', role: 'orgreader', org: 'globex', sha256: sha256(unkey) },
    { type: 'personal', user: 'bob', key: bystander }
  ]) as [string, string]
  t.equal((await gw.get('/api/v1/users', kong)).status, 200, 'the imported key works')
  const ws = await openClient(gw.port, '/api/v1/users', { key: kong })
  t.teardown(() => ws.socket.terminate())
  ws.socket.send('hello')
  t.equal((await ws.next()).data.toString(), 'hello', 'a WebSocket on the imported key is open')

  const source = 'https://gitlab.example.com/acme/app/-/blob/main/.env'
  const res = await call(gw, 'POST', '/admin/v1/keys/leaked', TOKEN, { keys: [kong, unkey, foreignKey()], source })
  t.equal(res.status, 200)
  const [unknownHash] = (res.json() as { results: Array<{ token_hash: string }> }).results.slice(2).map((r) => r.token_hash)
  t.same(res.json(), {
    results: [
      { token_hash: sha256(kong), label: 'true_positive', id: kongId },
      { token_hash: sha256(unkey), label: 'true_positive', id: unkeyId },
      { token_hash: unknownHash, label: 'false_positive' }
    ],
    revoked: 2
  }, 'imported keys (a plaintext import and a SHA-256 import) are true positives; a random token is not')

  t.ok(await eventually(async () => (await gw.get('/api/v1/users', kong)).status === 401, 1000) >= 0, 'the gateway refuses the leaked key')
  t.equal((await gw.get('/api/v1/orgs/globex/projects', unkey)).status, 401)
  t.equal((await gw.get('/api/v1/users', bystander)).status, 200, 'another imported key is untouched')
  const closed = await Promise.race([ws.closed, sleep(2000).then(() => undefined)])
  t.equal(closed?.code, 1008, 'the WebSocket on the leaked imported key is closed with 1008')
  t.match(await gw.client.hgetall(gw.fixtures.keys.key(kongId)), { status: 'revoked', revoked_reason: 'leaked', leak_source: source, imported: 'key' })
  const view = await call(gw, 'GET', `/admin/v1/keys/${unkeyId}`, TOKEN)
  t.match(view.json(), { status: 'revoked', revoked_reason: 'leaked', leak_source: source, imported: 'sha256' })
  const audit = (await call(gw, 'GET', '/admin/v1/audit?since=1h&limit=100', TOKEN)).json() as { entries: Array<{ action: string, target: string }> }
  t.same(audit.entries.filter((e) => e.action === 'key.leaked').map((e) => e.target).sort(), [`key:${kongId}`, `key:${unkeyId}`].sort(), 'one key.leaked entry each')

  const replay = await call(gw, 'POST', '/admin/v1/keys/leaked', TOKEN, { keys: [kong], source: 'again' })
  t.match(replay.json(), { results: [{ label: 'true_positive', id: kongId }], revoked: 0 }, 'a replay changes nothing twice')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(kongId), 'leak_source'), source)
  t.notOk(gw.rawLogs.some((l) => l.includes(kong) || l.includes(unkey)), 'no log line holds a reported key')
})

t.test('the CLI: keygate keys leaked revokes an imported key', async (t) => {
  const gw = await startGateway(t, { yaml: ON, env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const kong = foreignKey()
  const [id] = await importKeys(gw, [{ type: 'personal', user: 'alice', key: kong }]) as [string]
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-leaked-')), 'found.txt')
  writeFileSync(file, `${kong}\nnot-a-key\n`)
  const run = await runCli(['keys', 'leaked', file, '--source', 'trufflehog: acme/app', '--json'], cliEnv(gw))
  t.equal(run.code, 0, run.stderr)
  t.same(JSON.parse(run.stdout), [
    { token_hash: sha256(kong), label: 'true_positive', id, revoked: true },
    { token_hash: sha256('not-a-key'), label: 'false_positive' }
  ])
  t.notOk(run.stdout.includes(kong), 'the output never holds the key')
  t.match(await gw.client.hgetall(gw.fixtures.keys.key(id)), { status: 'revoked', revoked_reason: 'leaked', leak_source: 'trufflehog: acme/app' })
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', kong)).status === 401, 1000) >= 0, 'the gateway refuses it')
})

t.test("an org admin's report: another org's imported key is a false positive, told nowhere", async (t) => {
  const gw = await startGateway(t, { yaml: ON, env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('orgadmin', ['keygate:org:admin', 'users:read'])
  await gw.fixtures.user('olga', 'acme', 'orgadmin')
  const olga = await gw.fixtures.personalKey('olga')
  const theirs = foreignKey()
  const ours = foreignKey()
  const broader = foreignKey()
  const [theirsId, oursId, broaderId] = await importKeys(gw, [
    { type: 'personal', user: 'carol', key: theirs },
    { type: 'personal', user: 'alice', key: ours },
    { type: 'bot', role: 'admin', org: 'acme', key: broader }
  ]) as [string, string, string]

  const res = await call(gw, 'POST', '/admin/v1/keys/leaked', olga.key, { keys: [theirs, ours, broader], source: 'x' })
  t.equal(res.status, 200)
  t.same(res.json(), {
    results: [
      { token_hash: sha256(theirs), label: 'false_positive' },
      { token_hash: sha256(ours), label: 'true_positive', id: oursId },
      { token_hash: sha256(broader), label: 'true_positive', id: broaderId }
    ],
    revoked: 2
  }, 'its org\'s keys revoked, a broader one too; another org\'s told nothing about')
  t.notOk(res.body.includes(theirsId), 'the other org\'s key id is not in the answer')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(theirsId), 'status'), 'active', 'the other org\'s key is not revoked')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(broaderId), 'revoked_reason'), 'leaked', 'the broader key of its org is revoked')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(oursId), 'revoked_reason'), 'leaked')
  t.equal((await gw.get('/api/v1/orgs/globex/projects', theirs)).status, 200, 'the other org\'s key still works')

  const trail = [
    await call(gw, 'GET', '/admin/v1/audit?since=1h&limit=1000', olga.key),
    await call(gw, 'GET', '/admin/v1/audit/refusals?since=1h&limit=1000', olga.key)
  ]
  for (const page of trail) t.equal(page.status, 200)
  t.notOk(trail.some((p) => p.body.includes(theirsId)), 'nor in the org admin\'s audit trail, changes or refusals')
  t.ok(trail[0]?.body.includes(`key:${broaderId}`), '(its own org\'s revocations are there: the trail is read)')
  const all = await call(gw, 'GET', '/admin/v1/audit/refusals?since=1h&limit=1000', TOKEN)
  t.notOk(all.body.includes(theirsId), 'no refusal was recorded against the other org\'s key at all')
})

t.test('keys.accept_imported off: a reported imported key is revoked all the same', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const kong = foreignKey()
  const [id] = await importKeys(gw, [{ type: 'personal', user: 'alice', key: kong }]) as [string]
  t.equal((await gw.get('/api/v1/users', kong)).status, 401, 'the gateway does not accept it now')
  const res = await call(gw, 'POST', '/admin/v1/keys/leaked', TOKEN, { keys: [kong], source: 'x' })
  t.same(res.json(), { results: [{ token_hash: sha256(kong), label: 'true_positive', id }], revoked: 1 })
  t.equal(await gw.client.hget(gw.fixtures.keys.key(id), 'revoked_reason'), 'leaked', 'revoked before it can ever be accepted')
})
