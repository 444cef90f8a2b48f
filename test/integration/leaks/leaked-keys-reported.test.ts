/**
 * Leaked keys from scanners other than GitHub: `POST /admin/v1/keys/leaked` and
 * `keygate keys leaked <file>`, against real Redis and the real executable.
 *
 * - an admin's report revokes the live keys of every org; labels and ids in order;
 * - an org admin's report revokes every key of its own org it names, even one acting
 *   with a role beyond its grants (the report holds the key: revoking only takes access
 *   away); another org's key (native or imported) is a false positive, left alone, its
 *   id told nowhere (answer, audit trail); a self principal is refused;
 * - the body may hold whole keys on this route only, and no log line holds one;
 * - the CLI revokes from a file, and `keys show` tells the reason and the source.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { adminCall as call, eventually, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'leaked-admin-token-0123456789abcdef'
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

t.test('the admin API: scoped reports', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('orgadmin', ['keygate:org:admin', 'users:read'])
  await gw.fixtures.role('selfservice', ['keygate:keys:self', 'users:read'])
  await gw.fixtures.user('olga', 'acme', 'orgadmin')
  await gw.fixtures.user('sam', 'acme', 'selfservice')
  const olga = await gw.fixtures.personalKey('olga')
  const sam = await gw.fixtures.personalKey('sam')
  const acme = await gw.fixtures.personalKey('alice')
  const acmeBot = await gw.fixtures.botKey('admin', 'acme')
  const globex = await gw.fixtures.personalKey('carol')

  const byOrgAdmin = await call(gw, 'POST', '/admin/v1/keys/leaked', olga.key, { keys: [acme.key, globex.key, 'kg_garbage', acmeBot.key], source: 'https://gitlab.example.com/acme/app/-/blob/main/.env' })
  t.equal(byOrgAdmin.status, 200)
  t.same(byOrgAdmin.json(), {
    results: [
      { token_hash: sha256(acme.key), label: 'true_positive', id: acme.id },
      { token_hash: sha256(globex.key), label: 'false_positive' },
      { token_hash: sha256('kg_garbage'), label: 'false_positive' },
      { token_hash: sha256(acmeBot.key), label: 'true_positive', id: acmeBot.id }
    ],
    revoked: 2
  }, "the org admin revokes every key of its org the report holds, a broader one too; another org's is told nothing about")
  t.match(await gw.client.hgetall(gw.fixtures.keys.key(acmeBot.id)), { status: 'revoked', revoked_reason: 'leaked' }, 'the key with a broader role is revoked: its holder had its authority already')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', acmeBot.key)).status === 401, 1000) >= 0, 'and refused at the gateway')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', acme.key)).status === 401, 1000) >= 0, 'the reported key is refused')
  t.equal((await gw.get('/api/v1/orgs/globex/projects', globex.key)).status, 200, "another org's key still works")
  t.match(await gw.client.hgetall(gw.fixtures.keys.key(acme.id)), { status: 'revoked', revoked_reason: 'leaked', leak_source: 'https://gitlab.example.com/acme/app/-/blob/main/.env' })
  t.equal(await gw.client.hget(gw.fixtures.keys.key(globex.id), 'status'), 'active')

  const bySelf = await call(gw, 'POST', '/admin/v1/keys/leaked', sam.key, { keys: [globex.key], source: 'x' })
  t.equal(bySelf.status, 403, 'keygate:keys:self: 403')

  const byAdmin = await call(gw, 'POST', '/admin/v1/keys/leaked', TOKEN, { keys: [globex.key, acme.key, acmeBot.key], source: 'trufflehog: acme/app' })
  t.same(byAdmin.json(), {
    results: [
      { token_hash: sha256(globex.key), label: 'true_positive', id: globex.id },
      { token_hash: sha256(acme.key), label: 'true_positive', id: acme.id },
      { token_hash: sha256(acmeBot.key), label: 'true_positive', id: acmeBot.id }
    ],
    revoked: 1
  }, 'an admin reaches every org and every role; keys already revoked are true positives, not revoked again')

  const view = await call(gw, 'GET', `/admin/v1/keys/${globex.id}`, TOKEN)
  t.match(view.json(), { status: 'revoked', revoked_reason: 'leaked', leak_source: 'trufflehog: acme/app' })
  const audit = (await call(gw, 'GET', '/admin/v1/audit?since=1h&limit=100', TOKEN)).json() as { entries: Array<{ action: string, actor: string, target: string }> }
  t.same(audit.entries.filter((e) => e.action === 'key.leaked').map((e) => [e.actor, e.target]).sort(), [
    ['admin-token', `key:${globex.id}`], [`key:${olga.id}`, `key:${acmeBot.id}`], [`key:${olga.id}`, `key:${acme.id}`]
  ].sort(), 'one key.leaked entry per revoked key, with the reporting principal')

  const elsewhere = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', name: globex.key })
  t.equal(elsewhere.status, 400, 'a whole key anywhere else is still refused unread')
  const tooMany = await call(gw, 'POST', '/admin/v1/keys/leaked', TOKEN, { keys: Array.from({ length: 1001 }, () => 'kg_x'), source: 'x' })
  t.equal(tooMany.status, 400, 'at most 1,000 keys a report')
  for (const k of [acme, globex, acmeBot]) t.notOk(gw.rawLogs.some((l) => l.includes(k.key.slice(20))), 'no log line holds a reported key')
})

t.test('the CLI: keygate keys leaked <file>, and keys show', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const live = await gw.fixtures.personalKey('alice')
  const dir = mkdtempSync(join(tmpdir(), 'keygate-leaked-'))
  const file = join(dir, 'found.txt')
  writeFileSync(file, `# found by a scanner\n${live.key}\n\nkg_notakey\n`)

  const run = await runCli(['keys', 'leaked', file, '--source', 'https://pastebin.example/abc', '--json'], env)
  t.equal(run.code, 0, run.stderr)
  t.same(JSON.parse(run.stdout), [
    { token_hash: sha256(live.key), label: 'true_positive', id: live.id, revoked: true },
    { token_hash: sha256('kg_notakey'), label: 'false_positive' }
  ])
  t.notOk(run.stdout.includes(live.key), 'the output never holds the key')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', live.key)).status === 401, 1000) >= 0, 'the key is refused')

  const shown = await runCli(['keys', 'show', live.id], env)
  t.match(shown.stdout, /revoked_reason\s+leaked/)
  t.match(shown.stdout, /leak_source\s+https:\/\/pastebin\.example\/abc/)
  const again = await runCli(['keys', 'leaked', file], env)
  t.match(again.stdout, new RegExp(`true_positive\\s+key ${live.id} was already revoked`))
  const empty = join(dir, 'empty.txt')
  writeFileSync(empty, '# nothing\n')
  t.equal((await runCli(['keys', 'leaked', empty], env)).code, 2, 'a file with no key is a usage error')
})
