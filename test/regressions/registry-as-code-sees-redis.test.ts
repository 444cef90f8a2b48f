/**
 * Security review, finding 3: the registry as code ignored org records' `key_max_ttl`
 * and records written with redis-cli. `export` dropped the org key policy (an org with
 * only that field exported as `acme: {}`, which `plan` then rejected); `apply --prune`
 * deleted the org record and its policy behind a plan line naming no field (a 365-day
 * key was accepted afterwards where 30 days was the cap); orgs and users written with
 * `redis-cli` (a bare HSET, no index entry) were missing from `export` and from
 * `users list`.
 *
 * Lists and export read what Redis holds (the index sets and a SCAN of the namespace),
 * `key_max_ttl` is a field of the file, a plan names every field it changes, and prune
 * never deletes a record holding what a file cannot carry.
 */
import t from 'tap'
import { parseRegistryFile } from '../../src/admin/as-code/registry-file.js'
import { registryYaml } from '../../src/admin/as-code/registry-export.js'
import { startGateway } from '../helpers/gateway.js'

t.test('export, plan, prune and lists see what Redis holds', async (t) => {
  const gw = await startGateway(t)
  const admin = gw.fixtures.admin
  const raw = gw.client
  await admin.putOrg('capped', { keyMaxTtl: '30d' })
  // as an admin with redis-cli would: a record, no index entry
  await raw.hset(`${gw.prefix}org:rawco`, 'rate_limit', '1234/1s')
  await raw.hset(`${gw.prefix}user:rawuser`, { org: 'acme', role: 'reader', status: 'active' })
  await raw.hset(`${gw.prefix}role:rawrole`, { permissions: 'users:read' })
  await raw.hset(`${gw.prefix}org:oddco`, { name: 'Odd', billing_plan: 'gold' })

  const exported = await admin.exportRegistry()
  const yaml = registryYaml(exported)
  const orgs = Object.fromEntries(exported.records.org)
  t.same(orgs.capped, { key_max_ttl: '30d' }, 'the org key policy is exported')
  t.same(orgs.rawco, { rate_limit: '1234/1s' }, 'an org written with redis-cli is exported')
  t.ok(exported.records.user.some(([id]) => id === 'rawuser'), 'a user written with redis-cli is exported')
  t.ok(exported.records.role.some(([name]) => name === 'rawrole'), 'a role written with redis-cli is exported')
  t.ok((await admin.listUsers()).some((u) => u.id === 'rawuser'), 'and listed')
  t.ok((await admin.listUsers({ org: 'acme' })).some((u) => u.id === 'rawuser'), 'and listed in its org')
  t.ok((await admin.listOrgs()).some((o) => o.org === 'rawco'), 'orgs list it')
  t.ok((await admin.listRoles()).some((r) => r.name === 'rawrole'), 'roles list it')

  const again = await admin.planRegistry(parseRegistryFile(yaml), true)
  t.same(again, { ok: true, changes: [] }, 'its own export plans as no change, pruned or not')

  const without = parseRegistryFile(yaml.replace(/\n {2}capped:\n {4}key_max_ttl: 30d/, ''))
  t.notOk(without.records.org.has('capped'), 'a file without the capped org')
  const pruned = await admin.planRegistry(without, true)
  t.match(pruned, {
    ok: true,
    changes: [{ op: 'delete', kind: 'org', name: 'capped', fields: [{ field: 'key_max_ttl', from: '30d' }] }]
  }, 'the plan names the policy it deletes')

  const noOdd = parseRegistryFile(yaml.replace(/\n {2}oddco:\n {4}name: Odd/, ''))
  t.notOk(noOdd.records.org.has('oddco'))
  const refused = await admin.applyRegistry(noOdd, { prune: true })
  t.match(refused, { ok: false, problems: [{ path: 'orgs.oddco', message: /billing_plan/ }] },
    'prune refuses a record holding fields a file cannot carry')
  t.same(await raw.hgetall(`${gw.prefix}org:oddco`), { name: 'Odd', billing_plan: 'gold' }, 'untouched')
})
