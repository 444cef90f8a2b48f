/**
 * Deactivating a user says which BOT keys they created, and can revoke them.
 *
 * The bug: BOT keys are independent of users (they keep working when their creator is
 * deactivated, by design), but nothing told the admin deactivating someone that keys
 * they had made were still live. Now `keygate users deactivate` and
 * POST /admin/v1/users/:id/deactivate report them, and `--revoke-created-keys`
 * (`{"revoke_created_keys": true}`) revokes them in the same MULTI/EXEC as the
 * deactivation. By default they keep working.
 */
import t from 'tap'
import { cliEnv, runCli } from '../helpers/cli.js'
import { adminCall as call, eventually, startGateway } from '../helpers/gateway.js'
import { watchGatewayRedis } from '../helpers/redis-monitor.js'

const TOKEN = 'test-admin-token-0123456789abcdef'

t.test('admin API: reported by default, revoked on request, in one transaction', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  const bot = await f.botKey('reader', 'acme', { createdBy: 'bob' })
  const other = await f.botKey('reader', 'acme', { createdBy: 'alice' })
  const globexBot = await f.botKey('reader', 'globex', { createdBy: 'bob' })

  const reported = await call(gw, 'POST', '/admin/v1/users/bob/deactivate', TOKEN)
  t.equal(reported.status, 200)
  t.same(reported.json(), { id: 'bob', changed: true, created_keys: [bot.id, globexBot.id].sort(), revoked_keys: [] }, 'the BOT keys bob created, still active')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 200, 'by default they keep working')
  t.equal((await call(gw, 'POST', '/admin/v1/users/bob/activate', TOKEN)).status, 200)

  const { result: revoked, commands } = await watchGatewayRedis(gw, async () =>
    await call(gw, 'POST', '/admin/v1/users/bob/deactivate', TOKEN, { revoke_created_keys: true }))
  t.same(revoked.json(), { id: 'bob', changed: true, created_keys: [], revoked_keys: [bot.id, globexBot.id].sort() })
  t.equal(await gw.client.hget(f.keys.key(bot.id), 'status'), 'revoked')
  t.equal(await gw.client.hget(f.keys.key(globexBot.id), 'status'), 'revoked')
  t.equal(await gw.client.hget(f.keys.key(other.id), 'status'), 'active', 'a key someone else created is untouched')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', bot.key)).status === 401) >= 0, 'the data plane refuses it')

  const multi = commands.findIndex((c) => c.toLowerCase() === 'multi')
  const exec = commands.findIndex((c) => c.toLowerCase() === 'exec')
  const inside = commands.slice(multi, exec)
  t.ok(multi >= 0 && exec > multi, 'one MULTI/EXEC')
  t.ok(inside.some((c) => c.startsWith(`hset ${f.keys.user('bob')} status deactivated`)), 'the deactivation is inside it')
  for (const id of [bot.id, globexBot.id]) t.ok(inside.some((c) => c.startsWith(`hset ${f.keys.key(id)} status revoked`)), `the revocation of ${id} is inside it`)
  t.equal(commands.filter((c) => c.toLowerCase() === 'exec').length, 1, 'and only one')
})

t.test('an org admin reports and revokes only its org\'s keys', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('orgadmin', ['users:*', 'keygate:org:admin'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = await f.personalKey('oscar')
  const bot = await f.botKey('reader', 'acme', { createdBy: 'bob' })
  const globexBot = await f.botKey('reader', 'globex', { createdBy: 'bob' })
  const res = await call(gw, 'POST', '/admin/v1/users/bob/deactivate', oscar.key, { revoke_created_keys: true })
  t.same(res.json(), { id: 'bob', changed: true, created_keys: [], revoked_keys: [bot.id] })
  t.equal(await gw.client.hget(f.keys.key(globexBot.id), 'status'), 'active', 'another org\'s key is not its to revoke')
})

t.test('CLI: keygate users deactivate [--revoke-created-keys]', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const bot = await gw.fixtures.botKey('reader', 'acme', { createdBy: 'bob' })

  const reported = await runCli(['users', 'deactivate', 'bob'], env)
  t.equal(reported.code, 0, reported.stderr)
  t.match(reported.stdout, `BOT keys they created still work: ${bot.id}`)
  t.match(reported.stdout, '--revoke-created-keys')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(bot.id), 'status'), 'active')

  await runCli(['users', 'activate', 'bob'], env)
  const revoked = await runCli(['users', 'deactivate', 'bob', '--revoke-created-keys', '--json'], env)
  t.equal(revoked.code, 0, revoked.stderr)
  t.same(JSON.parse(revoked.stdout), { id: 'bob', status: 'deactivated', changed: true, created_keys: [], revoked_keys: [bot.id] })
  t.equal(await gw.client.hget(gw.fixtures.keys.key(bot.id), 'status'), 'revoked')
})
