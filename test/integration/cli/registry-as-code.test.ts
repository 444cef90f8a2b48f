/**
 * The registry as code, through the real `keygate` executable against real Redis:
 * export, plan (exit 0 and 3), apply, prune. Problems: registry-file-problems.test.ts;
 * an apply racing a CLI edit: registry-apply-race.test.ts.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { dumpRegistry, registryFile } from '../../helpers/registry-files.js'
import { fullAdmin } from '../../helpers/fixtures.js'
import { registryYaml } from '../../../src/admin/as-code/registry-export.js'
import { parseRegistryFile } from '../../../src/admin/as-code/registry-file.js'

const file = registryFile
const dump = dumpRegistry

t.test('export, plan, apply, prune', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const key = await gw.fixtures.personalKey('alice')
  await gw.client.hset(gw.fixtures.keys.org('acme'), { rate_limit: '1000/1s', name: 'Acme Corp' })
  await gw.client.sadd(gw.fixtures.keys.orgs, 'acme')

  const exported = await runCli(['registry', 'export'], env)
  t.equal(exported.code, 0, exported.stderr)
  const doc = parse(exported.stdout) as { roles: Record<string, unknown>, orgs: Record<string, unknown>, users: Record<string, unknown> }
  t.same(doc.roles.reader, { permissions: ['users:read'] })
  t.same(doc.orgs, { acme: { name: 'Acme Corp', rate_limit: '1000/1s' } }, 'orgs with their limits')
  t.same(doc.users.alice, { org: 'acme', role: 'reader' })
  t.notOk(exported.stdout.includes(key.id), 'no key id')
  const hash = await gw.client.hget(gw.fixtures.keys.key(key.id), 'hash') ?? 'none'
  t.notOk(exported.stdout.includes(hash) || exported.stdout.includes(key.key.slice(20)), 'no key, secret or hash')
  const admin = fullAdmin(gw.client, gw.fixtures.keys, 'kg_', 'cli:test')
  // (the same as the CLI's plan, in process: the exit codes are what the CLI runs below check)
  const pending = async (path: string, prune = false): Promise<number> => {
    const r = await admin.planRegistry(parseRegistryFile(readFileSync(path, 'utf8')), prune)
    return r.ok ? r.changes.length : -1
  }
  const scoped = parse(registryYaml(await admin.exportRegistry({ org: 'globex' }))) as {
    org: string,
    roles: Record<string,
    unknown>,
    users: Record<string,
    unknown>
  }
  t.equal(scoped.org, 'globex')
  t.same(Object.keys(scoped.users), ['carol'], '--org: its users only')
  t.same(Object.keys(scoped.roles), ['orgreader'], '--org: the roles they act with')

  const path = file(exported.stdout)
  const same = await runCli(['registry', 'plan', path], env)
  t.equal(same.code, 0, 'plan of the export: exit 0')
  t.match(same.stdout, /No changes/)

  const edited = file(exported.stdout
    .replace('  reader:\n    permissions:\n      - users:read\n', '  reader:\n    permissions:\n      - users:read\n      - orgs:read\n    description: reads users and orgs\n')
    .replace('users:\n', 'users:\n  dave:\n    org: acme\n    role: reader\n'))
  const before = await dump(gw)
  const plan = await runCli(['registry', 'plan', edited], env)
  t.equal(plan.code, 3, 'changes pending: exit 3')
  t.match(plan.stdout, /~ role reader\n {4}permissions: users:read -> users:read orgs:read\n {4}description: \(none\) -> reads users and orgs\n/)
  t.match(plan.stdout, /\+ user dave\n/)
  t.match(plan.stdout, /Plan: 1 to create, 1 to change, 0 to delete\./)
  t.same(await dump(gw), before, 'plan writes nothing')

  const apply = await runCli(['registry', 'apply', edited], env)
  t.equal(apply.code, 0, apply.stderr)
  t.match(apply.stdout, /Applied: 1 created, 1 changed, 0 deleted\./)
  t.same(await gw.client.hgetall(gw.fixtures.keys.role('reader')), { permissions: 'users:read orgs:read', description: 'reads users and orgs' })
  t.same(await gw.client.hgetall(gw.fixtures.keys.user('dave')), { org: 'acme', role: 'reader', status: 'active' })
  t.ok(await gw.client.sismember(gw.fixtures.keys.orgUsers('acme'), 'dave'), 'indexed in its org')
  t.equal(await pending(edited), 0, 'applied: nothing pending')
  t.equal((await gw.get('/api/v1/orgs/acme/x', key.key)).status, 200, "alice's key has the role's new permission")

  const applies = (await gw.client.xrange(gw.fixtures.keys.audit, '-', '+')).map(([, f]) => ({ action: f[f.indexOf('action') + 1], detail: f[f.indexOf('detail') + 1] })).filter((e) => e.action === 'registry.apply')
  t.equal(applies.length, 1, 'one audit entry registry.apply')
  t.match(JSON.parse(applies[0]?.detail ?? '{}'), { created: 'user:dave', changed: 'role:reader', deleted: '', prune: 'false' })

  // a file naming less: kept without --prune, deleted with it
  const small = file('roles:\n  reader: { permissions: [users:read, orgs:read], description: reads users and orgs }\n  writer: { permissions: ["users:*"] }\n  orgreader: { permissions: [orgs:read] }\n  admin: { permissions: ["*"] }\nusers:\n  alice: { org: acme, role: reader }\n  bob: { org: acme, role: writer }\n')
  t.equal(await pending(small), 0, 'records the file does not name are kept')
  const prunePlan = await runCli(['registry', 'plan', small, '--prune'], env)
  t.equal(prunePlan.code, 3)
  t.match(prunePlan.stdout, /- role none\n/)
  t.match(prunePlan.stdout, /- org acme\n/)
  t.match(prunePlan.stdout, /- user carol\n/)
  t.match(prunePlan.stdout, /- user dave\n/)
  t.equal((await runCli(['registry', 'apply', small, '--prune'], env)).code, 0)
  t.equal(await gw.client.exists(gw.fixtures.keys.user('carol'), gw.fixtures.keys.org('acme'), gw.fixtures.keys.role('none')), 0, 'pruned')
  t.notOk(await gw.client.sismember(gw.fixtures.keys.orgUsers('globex'), 'carol'), 'and out of its org index')
  t.equal(await pending(small, true), 0, 'pruned: nothing pending')
})
