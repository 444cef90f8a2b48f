/**
 * Identities in the registry as code (docs/registry-as-code.md), through the real `keygate`
 * executable against real Redis: a file with an identity applied (its org's external-id index
 * written), exported back the same, a change planned field by field (`meta` by its size alone),
 * and --prune deleting one no key names and refusing, as `identities delete` without --force, one
 * that active keys name.
 */
import t from 'tap'
import { parse } from 'yaml'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { registryFile as file } from '../../helpers/registry-files.js'
import { fullAdmin } from '../../helpers/fixtures.js'

const MARKER = 'zq-registry-meta-marker-51c'

t.test('identities: apply, export round trip, plan, prune', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const { keys } = gw.fixtures
  const admin = fullAdmin(gw.client, keys, 'kg_', 'cli:test')
  const exported = await runCli(['registry', 'export'], env)
  t.equal(exported.code, 0, exported.stderr)

  const withIdentities = file(exported.stdout.replace(/identities: \{\}\n?/, '') +
    'identities:\n' +
    `  cust-1:\n    org: acme\n    external_id: cus_1\n    meta: '{ "plan": "pro", "marker": "${MARKER}" }'\n    rate_limit: 10/1s\n    quota: 1000/day\n    credits: "500"\n` +
    '  cust-2: { org: acme, external_id: cus_2 }\n')
  const plan = await runCli(['registry', 'plan', withIdentities], env)
  t.equal(plan.code, 3, plan.stderr)
  t.match(plan.stdout, /\+ identity cust-1\n {4}org: acme\n {4}external_id: cus_1\n {4}meta: \(\d+ bytes\)\n {4}rate_limit: 10\/1s\n {4}quota: 1000\/day\n {4}credits: 500\n/)
  t.notOk(plan.stdout.includes(MARKER), 'meta by its size alone')
  t.match(plan.stdout, /Plan: 2 to create, 0 to change, 0 to delete\./)

  const apply = await runCli(['registry', 'apply', withIdentities], env)
  t.equal(apply.code, 0, apply.stderr)
  t.same(await gw.client.hgetall(keys.identity('cust-1')), {
    org: 'acme', external_id: 'cus_1', meta: `{"plan":"pro","marker":"${MARKER}"}`, rate_limit: '10/1s', quota: '1000/day', credits: '500'
  }, 'the record as `identities put` writes it')
  t.equal(await gw.client.hget(keys.orgIdentities('acme'), 'cus_2'), 'cust-2', "in its org's external-id index")
  t.ok(await gw.client.sismember(keys.identities, 'cust-1'), 'indexed')
  t.equal((await admin.showIdentity('cust-1')).external_id, 'cus_1', 'the admin actions read it')
  t.equal((await runCli(['registry', 'plan', withIdentities], env)).code, 0, 'applied: nothing pending')

  // export round trip
  const again = await runCli(['registry', 'export'], env)
  const doc = parse(again.stdout) as { identities: Record<string, Record<string, string>> }
  t.same(doc.identities['cust-2'], { org: 'acme', external_id: 'cus_2' })
  t.equal(doc.identities['cust-1']?.meta, `{"plan":"pro","marker":"${MARKER}"}`)
  const scoped = parse((await runCli(['registry', 'export', '--org', 'globex'], env)).stdout) as { identities: object }
  t.same(scoped.identities, {}, '--org: that org\'s identities only')
  const round = await runCli(['registry', 'plan', file(again.stdout)], env)
  t.equal(round.code, 0, 'the export plans no change')

  // a change, field by field; an external id another identity holds is refused with its place
  const changed = file(again.stdout.replace('quota: 1000/day', 'quota: 2000/day'))
  const changePlan = await runCli(['registry', 'plan', changed], env)
  t.equal(changePlan.code, 3)
  t.match(changePlan.stdout, /~ identity cust-1\n {4}quota: 1000\/day -> 2000\/day\n/)
  const clash = await runCli(['registry', 'plan', file(again.stdout.replace('external_id: cus_2', 'external_id: cus_1'))], env)
  t.equal(clash.code, 1)
  t.match(clash.stderr, /identities\.cust-2\.external_id: external id "cus_1" already names identity "cust-1" in org acme/)
  const moved = await runCli(['registry', 'apply', file(again.stdout.replace(/cust-2:\n {4}org: acme/, 'cust-2:\n    org: globex'))], env)
  t.equal(moved.code, 1)
  t.match(moved.stderr, /an identity never moves to another org/)
  t.equal(await gw.client.hget(keys.identity('cust-2'), 'org'), 'acme', 'nothing written')

  // prune: one with an active key is refused as `identities delete` without --force; one without is deleted
  const { result: k } = await admin.createKey({ type: 'bot', role: 'reader', org: 'acme', identity: 'cust-1' })
  const none = file(again.stdout.replace(/identities:\n[\s\S]*$/, 'identities: {}\n'))
  const refused = await runCli(['registry', 'apply', none, '--prune'], env)
  t.equal(refused.code, 1)
  t.match(refused.stderr, new RegExp(`identities\\.cust-1: --prune would delete identity "cust-1", which has 1 active key\\(s\\) \\(${k.id}\\)`))
  t.equal(await gw.client.exists(keys.identity('cust-1'), keys.identity('cust-2')), 2, 'nothing deleted')
  const direct = await runCli(['identities', 'delete', 'cust-1'], env)
  t.not(direct.code, 0, '`identities delete` without --force refuses it too')

  const keepOne = file(again.stdout.replace(/ {2}cust-2:\n[\s\S]*$/, ''))
  t.notOk(keepOne.includes('cust-2'))
  const pruned = await runCli(['registry', 'apply', keepOne, '--prune'], env)
  t.equal(pruned.code, 0, pruned.stderr)
  t.match(pruned.stdout, /Applied: 0 created, 0 changed, 1 deleted\./)
  t.equal(await gw.client.exists(keys.identity('cust-2')), 0, 'pruned')
  t.equal(await gw.client.hget(keys.orgIdentities('acme'), 'cus_2'), null, 'and out of its org index')
  t.equal(await gw.client.exists(keys.identity('cust-1')), 1, 'the one with a key kept')
  t.equal(await gw.client.hget(keys.key(k.id), 'status'), 'active', 'its key untouched')
})
