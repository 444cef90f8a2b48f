/**
 * An org's allowance as code (docs/registry-as-code.md, docs/quotas.md): `quota` and
 * `credits` exported, planned and applied like the org's other fields; a file that does
 * not name `credits` keeps them (admins add to them as customers pay); a bad value is a
 * problem of the file, and nothing is written.
 */
import t from 'tap'
import { parse } from 'yaml'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { registryFile } from '../../helpers/registry-files.js'

t.test('orgs.<org>.quota and credits: export, plan, apply; credits kept when not named', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  await gw.client.hset(gw.fixtures.keys.org('acme'), { name: 'Acme', quota: '1000/month', credits: '50' })
  await gw.client.sadd(gw.fixtures.keys.orgs, 'acme')
  const exported = await runCli(['registry', 'export'], env)
  t.equal(exported.code, 0, exported.stderr)
  const doc = parse(exported.stdout) as { orgs: Record<string, unknown> }
  t.same(doc.orgs.acme, { name: 'Acme', quota: '1000/month', credits: '50' }, 'exported')

  const roles = 'roles:\n  reader: { permissions: [users:read] }\n  writer: { permissions: ["users:*"] }\n  orgreader: { permissions: [orgs:read] }\n  admin: { permissions: ["*"] }\n  none: { permissions: [] }\n'
  const raise = registryFile(`${roles}orgs:\n  acme: { name: Acme, quota: 5000/month }\n`)
  const plan = await runCli(['registry', 'plan', raise], env)
  t.equal(plan.code, 3, `changes pending: ${plan.stdout}`)
  t.match(plan.stdout, /quota/, 'the plan names the quota')
  t.equal((await runCli(['registry', 'apply', raise], env)).code, 0)
  t.same(await gw.client.hgetall(gw.fixtures.keys.org('acme')), { name: 'Acme', quota: '5000/month', credits: '50' }, 'the quota changed, the credits kept')

  const bot = await gw.fixtures.botKey('reader', 'acme')
  t.match((await gw.get('/api/v1/users', bot.key)).headers['ratelimit-policy'], /^"org-quota";q=5000;w=\d+, "org-credits";q=50$/, 'applied: the gateway meters it')

  const bad = registryFile(`${roles}orgs:\n  acme: { name: Acme, quota: 5000/year, credits: "-3" }\n`)
  const refused = await runCli(['registry', 'apply', bad], env)
  t.equal(refused.code, 1, 'an invalid file')
  t.match(refused.stderr + refused.stdout, /invalid quota "5000\/year"/)
  t.match(refused.stderr + refused.stdout, /invalid credits "-3"/)
  t.equal(await gw.client.hget(gw.fixtures.keys.org('acme'), 'quota'), '5000/month', 'nothing written')
})
