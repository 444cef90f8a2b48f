/**
 * Allowances set by the admin API and the CLI (docs/quotas.md), applied by a running
 * gateway: POST /keys with quota and credits, GET and POST /keys/:id/quota, POST
 * /orgs/:org/quota, `keys create --quota --credits`, `keys meter`, `orgs meter`; each change
 * audited (`quota.changed`, `credits.added`); admin only; one parser refuses a bad quota.
 * A rotation carries the allowance and the count spent.
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'

const TOKEN = 'quota-admin-token-0123456789abcdef0123'

async function policyOf (gw: TestGateway, key: string): Promise<string | undefined> {
  return (await gw.get('/api/v1/users', key)).headers['ratelimit-policy'] as string | undefined
}

t.test('the admin API: create with an allowance, read it, change it, audited; a rotation keeps the count', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const created = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', quota: '10/day', credits: 4 })
  t.equal(created.status, 201, created.body)
  const key = created.json() as { id: string, key: string, quota?: string, credits?: number }
  t.match(key, { quota: '10/day', credits: 4 }, 'the created key shows its allowance')
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await gw.get('/api/v1/users', key.key)).status)
  t.same(statuses, [200, 200, 200])

  const view = (await call(gw, 'GET', `/admin/v1/keys/${key.id}/quota`, TOKEN)).json() as Record<string, any>
  t.match(view, {
    id: key.id,
    org: 'acme',
    meter: key.id,
    key: { quota: { quota: '10/day', limit: 10, used: 3, remaining: 7 }, credits: { granted: 4, spent: 3, remaining: 1 } },
    org_allowance: {}
  }, 'GET /keys/:id/quota')
  t.match(view.key.quota.resets_at, /T00:00:00Z$/, 'refills at midnight UTC')

  const added = await call(gw, 'POST', `/admin/v1/keys/${key.id}/quota`, TOKEN, { add_credits: 6, quota: '20/day' })
  t.same(added.json(), { changed: true }, 'POST /keys/:id/quota')
  t.ok(await eventually(async () => (await policyOf(gw, key.key))?.startsWith('"key-quota";q=20;') === true, 1000, 10) >= 0, 'the new quota applies within 1 s')
  const after = (await call(gw, 'GET', `/admin/v1/keys/${key.id}/quota`, TOKEN)).json() as Record<string, any>
  t.match(after.key.credits, { granted: 10 }, 'credits 4 + 6')

  const audit = (await call(gw, 'GET', '/admin/v1/audit', TOKEN)).json() as { entries: Array<{ action: string, target: string, detail?: string }> }
  const mine = audit.entries.filter((e) => e.target === `key:${key.id}`)
  t.match(mine.find((e) => e.action === 'quota.changed')?.detail, '"quota":"20/day"', 'quota.changed')
  t.match(mine.find((e) => e.action === 'credits.added')?.detail, '"added":"6"', 'credits.added')

  // a rotation: the new key continues the count (spent: 3 + the policy checks above)
  const spent = ((await call(gw, 'GET', `/admin/v1/keys/${key.id}/quota`, TOKEN)).json() as Record<string, any>).key.quota.used as number
  const rotated = (await call(gw, 'POST', `/admin/v1/keys/${key.id}/rotate`, TOKEN, { grace: '1h' })).json() as { id: string, key: string }
  const next = (await call(gw, 'GET', `/admin/v1/keys/${rotated.id}/quota`, TOKEN)).json() as Record<string, any>
  t.match(next, { meter: key.id, key: { quota: { quota: '20/day', used: spent }, credits: { granted: 10, spent } } }, 'the new key: the same allowance, the count continued')
  t.equal((await gw.get('/api/v1/users', rotated.key)).status, 200)
  t.equal((await gw.get('/api/v1/users', key.key)).status, 200, 'the old key, in its grace')
  const both = (await call(gw, 'GET', `/admin/v1/keys/${rotated.id}/quota`, TOKEN)).json() as Record<string, any>
  t.equal(both.key.quota.used, spent + 2, 'both keys spend the one count')
})

t.test('an org allowance; org admins and bad values are refused, nothing written', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const set = await call(gw, 'POST', '/admin/v1/orgs/acme/quota', TOKEN, { quota: '100/month', add_credits: 50 })
  t.same(set.json(), { changed: true })
  const org = (await call(gw, 'GET', '/admin/v1/orgs/acme', TOKEN)).json() as Record<string, string>
  t.match(org, { quota: '100/month', credits: '50' }, 'the org record')
  const bot = await gw.fixtures.botKey('reader', 'acme')
  t.equal(await policyOf(gw, bot.key), `"org-quota";q=100;w=${monthSeconds()}, "org-credits";q=50`, 'every key of the org')
  t.same((await call(gw, 'POST', '/admin/v1/orgs/acme/quota', TOKEN, { quota: null })).json(), { changed: true }, 'null removes it')

  for (const body of [{ quota: '10/year' }, { quota: '0/day' }, { add_credits: 0 }, { add_credits: -5 }, {}]) {
    const r = await call(gw, 'POST', `/admin/v1/keys/${bot.id}/quota`, TOKEN, body)
    t.equal(r.status, 400, `${JSON.stringify(body)}: 400`)
  }
  t.equal((await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', quota: '5/hour' })).status, 400, 'a create with a bad quota')
  const orgAdmin = await gw.fixtures.botKey('admin', 'acme')
  await gw.client.hset(gw.fixtures.keys.role('admin'), 'permissions', 'keygate:org:admin users:read')
  const refused = await call(gw, 'POST', `/admin/v1/keys/${bot.id}/quota`, orgAdmin.key, { add_credits: 1000 })
  t.equal(refused.status, 403, 'an org admin grants itself no credits')
  t.same(await gw.client.hget(gw.fixtures.keys.key(bot.id), 'credits'), null, 'nothing written')
})

t.test('the CLI: keys create --quota --credits, keys meter, orgs meter', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const created = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--quota', '3/week', '--credits', '9', '--json'], env)
  t.equal(created.code, 0, created.stderr)
  const key = JSON.parse(created.stdout) as { id: string, key: string }
  t.equal(await policyOf(gw, key.key), '"key-quota";q=3;w=604800, "key-credits";q=9')
  const shown = await runCli(['keys', 'meter', key.id], env)
  t.match(shown.stdout, /quota 3\/week: 1 used, 2 left/, 'keys meter: the allowance as it stands')
  t.match(shown.stdout, /credits 9 granted, 1 spent, 8 left/)
  t.equal((await runCli(['keys', 'meter', key.id, '--quota', 'none', '--add-credits', '1'], env)).code, 0)
  t.ok(await eventually(async () => await policyOf(gw, key.key) === '"key-credits";q=10', 1000, 10) >= 0, 'quota removed, credits 10')
  const org = await runCli(['orgs', 'meter', 'acme', '--quota', '1000/day'], env)
  t.equal(org.code, 0, org.stderr)
  t.equal(await gw.client.hget(gw.fixtures.keys.org('acme'), 'quota'), '1000/day')
  // keygate check: the allowance shown, never spent; a refusal named
  const checked = await runCli(['check', 'GET', '/api/v1/users', '--json'], { ...env, KEYGATE_KEY: key.key })
  t.match(JSON.parse(checked.stdout), { allowed: true, quota: [{ name: 'key-credits', limit: 10 }] }, 'check: allowed, the credits shown')
  const before = await gw.client.hget(gw.fixtures.keys.meter('key', key.id), 'spent')
  await runCli(['check', 'GET', '/api/v1/users'], { ...env, KEYGATE_KEY: key.key })
  t.equal(await gw.client.hget(gw.fixtures.keys.meter('key', key.id), 'spent'), before, 'a check spends nothing')
  await gw.client.hset(gw.fixtures.keys.meter('key', key.id), 'spent', '10')
  const refused = await runCli(['check', 'GET', '/api/v1/users'], { ...env, KEYGATE_KEY: key.key })
  t.equal(refused.code, 3, 'denied: exit 3')
  t.match(refused.stdout, /DENY 429 quota_exceeded/)
  t.match(refused.stdout, /quota {5}refused by the quota: key-credits 0 of 10 left/, 'check names the quota')

  const bad = await runCli(['keys', 'meter', key.id, '--quota', '10/fortnight'], env)
  t.equal(bad.code, 2, 'a usage error')
  t.match(bad.stderr, /<count>\/<day\|week\|month>/, 'naming the form')
})

function monthSeconds (): number {
  const now = new Date()
  return (Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)) / 1000
}
