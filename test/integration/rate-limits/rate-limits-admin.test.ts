/**
 * Rate limits set by the CLI and the admin API (docs/rate-limits.md), applied by a
 * running gateway: `keys create/limit --rate-limit`, `roles put --rate-limit`,
 * `orgs put/list/show`; POST /keys (rate_limit), POST /keys/:id/limit, PUT
 * /roles/:name (rate_limit), PUT/GET /orgs. Limits are an admin's to set: an org
 * admin cannot raise its own. One parser refuses a malformed limit everywhere.
 */
import t from 'tap'
import { cliEnv, pooled, runCli, type CliRun } from '../../helpers/cli.js'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'

const TOKEN = 'ratelimit-admin-token-0123456789abcdef'

async function limitOf (gw: TestGateway, key: string): Promise<string | undefined> {
  return (await gw.get('/api/v1/users', key)).headers['ratelimit-limit']
}

async function becomes (gw: TestGateway, key: string, limit: string | undefined): Promise<boolean> {
  return await eventually(async () => await limitOf(gw, key) === limit, 1000, 10) >= 0
}

t.test('the CLI sets, shows and removes limits', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)

  const created = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--rate-limit', '7/1m', '--json'], env)
  t.equal(created.code, 0, created.stderr)
  const key = JSON.parse(created.stdout) as { id: string, key: string, rate_limit?: string }
  t.equal(key.rate_limit, '7/1m', 'keys create --rate-limit')
  t.equal(await limitOf(gw, key.key), '7', 'the gateway applies it')

  const limited = await runCli(['keys', 'limit', key.id, '--rate-limit', '500/1m'], env)
  t.equal(limited.code, 0, limited.stderr)
  t.ok(await becomes(gw, key.key, '500'), 'keys limit: applied within 1 s')
  const shown = JSON.parse((await runCli(['keys', 'show', key.id, '--json'], env)).stdout) as { rate_limit?: string, rate_limit_used?: number }
  t.equal(shown.rate_limit, '500/1m')
  t.ok((shown.rate_limit_used ?? 0) >= 2, `keys show: the use in the window (${shown.rate_limit_used ?? '-'})`)

  t.equal((await runCli(['keys', 'limit', key.id, '--rate-limit', 'none'], env)).code, 0, 'keys limit --rate-limit none')
  t.ok(await becomes(gw, key.key, undefined), 'removed')
  t.equal((await runCli(['roles', 'put', 'reader', '--permissions', 'users:read', '--rate-limit', '400/1m'], env)).code, 0, 'roles put --rate-limit')
  t.ok(await becomes(gw, key.key, '400'), "the role's limit applies")
  t.equal((await runCli(['roles', 'put', 'reader', '--permissions', 'users:read'], env)).code, 0, 'roles put without --rate-limit keeps it')
  t.equal(await limitOf(gw, key.key), '400')
  t.equal((await runCli(['roles', 'put', 'reader', '--permissions', 'users:read', '--rate-limit', 'none'], env)).code, 0)
  t.ok(await becomes(gw, key.key, undefined), 'all removed: no limit')

  const org = await runCli(['orgs', 'put', 'acme', '--rate-limit', '900/1h', '--name', 'Acme Corp', '--json'], env)
  t.equal(org.code, 0, org.stderr)
  t.match(JSON.parse(org.stdout), { org: 'acme', name: 'Acme Corp', rate_limit: '900/1h' }, 'orgs put')
  t.ok(await becomes(gw, key.key, '900'), 'the org limit applies')
  const list = JSON.parse((await runCli(['orgs', 'list', '--json'], env)).stdout) as Array<{ org: string, rate_limit_used?: number }>
  t.equal(list.length, 1)
  t.ok((list[0]?.rate_limit_used ?? 0) >= 1, 'orgs list: with the use in the window')
  const show = await runCli(['orgs', 'show', 'acme'], env)
  t.match(show.stdout, /rate_limit\s+900\/1h/, 'orgs show')

  // keygate check shows the limits that apply, and consumes nothing
  await gw.client.hset(gw.fixtures.keys.role('reader'), 'rate_limit', '80/1m')
  const before = JSON.parse((await runCli(['orgs', 'show', 'acme', '--json'], env)).stdout) as { rate_limit_used: number }
  const checked = await runCli(['check', 'GET', '/api/v1/users', '--json'], { ...env, KEYGATE_KEY: key.key })
  t.equal(checked.code, 0, checked.stderr)
  t.match(JSON.parse(checked.stdout), { allowed: true, rate_limits: { role: '80/1m', org: '900/1h' } }, 'check: the role and org limits')
  const human = await runCli(['check', 'GET', '/api/v1/users'], { ...env, KEYGATE_KEY: key.key })
  t.match(human.stdout, /limits\s+role 80\/1m, org 900\/1h/, 'check, for people')
  const after = JSON.parse((await runCli(['orgs', 'show', 'acme', '--json'], env)).stdout) as { rate_limit_used: number }
  t.equal(after.rate_limit_used, before.rate_limit_used, 'a check counts nothing')
  await gw.client.hset(gw.fixtures.keys.org('acme'), 'rate_limit', 'lots')
  t.match(JSON.parse((await runCli(['check', 'GET', '/api/v1/users', '--json'], { ...env, KEYGATE_KEY: key.key })).stdout),
    { allowed: false, status: 429, reason: 'invalid_record', rate_limits: { org: 'malformed' } }, 'check: a malformed org limit refuses')
  await gw.client.hset(gw.fixtures.keys.org('acme'), 'rate_limit', '900/1h')
  await gw.client.hdel(gw.fixtures.keys.role('reader'), 'rate_limit')

  // refusals change nothing: their runs go two at a time
  const bads = [['keys', 'limit', key.id, '--rate-limit', '10/sec'], ['orgs', 'put', 'acme', '--rate-limit', '0/1s'], ['roles', 'put', 'x', '--permissions', 'a:b', '--rate-limit', '5']]
  const refusals = await pooled([...bads, ['keys', 'limit', 'AAAAAAAAAAAAAAAA', '--rate-limit', '1/1s']].map((args) => async () => await runCli(args, env)))
  for (const [i, bad] of bads.entries()) {
    const r = refusals[i] as CliRun
    t.equal(r.code, 2, `${bad.join(' ')}: a usage error`)
    t.match(r.stderr, /<count>\/<period>/, 'naming the form')
  }
  t.equal((refusals[3] as CliRun).code, 1, 'an unknown key: exit 1')
})

t.test('the admin API sets limits; an org admin cannot', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const created = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', rate_limit: '6/1m' })
  t.equal(created.status, 201)
  const key = created.json() as { id: string, key: string, rate_limit?: string }
  t.equal(key.rate_limit, '6/1m', 'POST /keys with rate_limit')
  t.equal(await limitOf(gw, key.key), '6')

  const set = await call(gw, 'POST', `/admin/v1/keys/${key.id}/limit`, TOKEN, { rate_limit: '300/1m' })
  t.same(set.json(), { id: key.id, changed: true }, 'POST /keys/:id/limit')
  t.ok(await becomes(gw, key.key, '300'))
  const view = (await call(gw, 'GET', `/admin/v1/keys/${key.id}`, TOKEN)).json() as { rate_limit?: string, rate_limit_used?: number }
  t.equal(view.rate_limit, '300/1m', 'GET /keys/:id: the limit')
  t.ok((view.rate_limit_used ?? 0) >= 2, `and its use (${view.rate_limit_used ?? '-'})`)
  t.same((await call(gw, 'POST', `/admin/v1/keys/${key.id}/limit`, TOKEN, { rate_limit: null })).json(), { id: key.id, changed: true }, 'null removes it')

  t.ok(await becomes(gw, key.key, undefined))
  const role = await call(gw, 'PUT', '/admin/v1/roles/reader', TOKEN, { permissions: ['users:read'], rate_limit: '200/1m' })
  t.match(role.json(), { name: 'reader', rate_limit: '200/1m' }, 'PUT /roles/:name with rate_limit')
  t.ok(await becomes(gw, key.key, '200'))
  t.match((await call(gw, 'PUT', '/admin/v1/roles/reader', TOKEN, { permissions: ['users:read'], rate_limit: null })).json(), { name: 'reader' }, 'rate_limit null removes it')
  t.ok(await becomes(gw, key.key, undefined))

  const org = await call(gw, 'PUT', '/admin/v1/orgs/acme', TOKEN, { rate_limit: '100/1m', name: 'Acme' })
  t.match(org.json(), { org: 'acme', name: 'Acme', rate_limit: '100/1m' }, 'PUT /orgs/:org')
  t.ok(await becomes(gw, key.key, '100'))
  t.match((await call(gw, 'GET', '/admin/v1/orgs', TOKEN)).json(), { orgs: [{ org: 'acme', rate_limit: '100/1m' }] }, 'GET /orgs')
  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/globex', TOKEN, {})).status, 400, 'PUT /orgs with nothing to set: 400')
  t.same((await call(gw, 'PUT', '/admin/v1/orgs/initech', TOKEN, { rate_limit: '9/1s' })).json(), { org: 'initech', rate_limit: '9/1s', rate_limit_used: 0 }, 'another org')
  t.same((await call(gw, 'PUT', '/admin/v1/orgs/initech', TOKEN, { rate_limit: null })).json(), { org: 'initech' }, 'its only field removed: the record is gone')
  t.same(((await call(gw, 'GET', '/admin/v1/orgs', TOKEN)).json() as { orgs: Array<{ org: string }> }).orgs.map((o) => o.org), ['acme'], 'and left the list')
  t.equal((await call(gw, 'GET', '/admin/v1/orgs/initech', TOKEN)).status, 404)

  for (const [method, path, body] of [
    ['POST', '/admin/v1/keys', { type: 'bot', role: 'reader', org: 'acme', rate_limit: '6 per minute' }],
    ['POST', `/admin/v1/keys/${key.id}/limit`, { rate_limit: '0/1s' }],
    ['PUT', '/admin/v1/roles/reader', { permissions: [], rate_limit: '1/0s' }],
    ['PUT', '/admin/v1/orgs/acme', { rate_limit: 5 }]
  ] as const) {
    t.equal((await call(gw, method, path, TOKEN, body)).status, 400, `${method} ${path} ${JSON.stringify(body)}: 400`)
  }

  // an org admin of acme: reads its own org, sets nothing
  await gw.fixtures.role('orgadmin', ['keygate:org:admin', 'users:read'])
  await gw.fixtures.user('olga', 'acme', 'orgadmin')
  const olga = await gw.fixtures.personalKey('olga')
  t.equal((await call(gw, 'GET', '/admin/v1/orgs/acme', olga.key)).status, 200, 'an org admin reads its own org')
  t.equal((await call(gw, 'GET', '/admin/v1/orgs/globex', olga.key)).status, 404, 'another org: 404')
  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/acme', olga.key, { rate_limit: '99999/1s' })).status, 403, 'PUT /orgs: admin only')
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${key.id}/limit`, olga.key, { rate_limit: null })).status, 403, 'POST /keys/:id/limit: admin only')
  t.equal((await call(gw, 'POST', '/admin/v1/keys', olga.key, { type: 'bot', role: 'reader', org: 'acme', rate_limit: '99999/1s' })).status, 403, 'a key with its own limit: admin only')
  t.equal((await call(gw, 'POST', '/admin/v1/keys', olga.key, { type: 'bot', role: 'reader', org: 'acme' })).status, 201, 'without one, the org admin creates the key')
})
