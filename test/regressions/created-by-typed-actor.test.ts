/**
 * `created_by` is a typed actor, so a user can never own what a tool created.
 *
 * The bug: `created_by` held user ids (ownership: "the BOT keys a user created") and
 * actor names (`cli:root`, `admin-token`, `key:<id>`) alike, compared as plain
 * strings: a user named `cli:root` with `keygate:keys:self` owned, listed and could
 * revoke every BOT key `keygate` run as root had created. Now the registry writes
 * `user:<id>`, `key:<id>`, `cli:<name>` or `admin-token`, and only `user:` owns. A
 * legacy untyped value is read as a user id; `keygate migrate created-by` rewrites
 * such values in place.
 */
import t from 'tap'
import { userInfo } from 'node:os'
import { cliEnv, runCli } from '../helpers/cli.js'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

interface KeyView { id: string, created_by?: string }

t.test('a user named after the CLI\'s actor owns nothing the CLI created', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const f = gw.fixtures
  const cliActor = `cli:${userInfo().username}`
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])

  const made = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--json'], env)
  t.equal(made.code, 0, made.stderr)
  const bot = JSON.parse(made.stdout) as { id: string }
  t.equal(await gw.client.hget(f.keys.key(bot.id), 'created_by'), cliActor, 'the CLI records itself, typed')

  await f.user(cliActor, 'acme', 'selfreader')
  const impostor = await f.personalKey(cliActor)
  const list = (await call(gw, 'GET', '/admin/v1/keys', impostor.key)).json() as { keys: KeyView[] }
  t.notOk(list.keys.some((k) => k.id === bot.id), 'not in its list')
  t.equal((await call(gw, 'GET', `/admin/v1/keys/${bot.id}`, impostor.key)).status, 404, 'not shown')
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${bot.id}/revoke`, impostor.key)).status, 404, 'not revocable')
  t.equal(await gw.client.hget(f.keys.key(bot.id), 'status'), 'active')
  const cliList = await runCli(['keys', 'list', '--user', cliActor, '--json'], env)
  t.same((JSON.parse(cliList.stdout) as KeyView[]).map((k) => k.id), [impostor.id], 'keys list --user: its own personal key only')
})

t.test('--created-by and created_by name a user, stored as user:<id>', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef' } })
  const env = cliEnv(gw)
  const made = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--created-by', 'alice', '--json'], env)
  t.equal(made.code, 0, made.stderr)
  const { id } = JSON.parse(made.stdout) as { id: string }
  t.equal(await gw.client.hget(gw.fixtures.keys.key(id), 'created_by'), 'user:alice')
  const api = await call(gw, 'POST', '/admin/v1/keys', 'test-admin-token-0123456789abcdef', { type: 'bot', role: 'reader', org: 'acme', created_by: 'bob' })
  t.match(api.json(), { id: String })
  t.equal(await gw.client.hget(gw.fixtures.keys.key((api.json() as { id: string }).id), 'created_by'), 'user:bob')
  const mine = (await gw.fixtures.admin.listKeys({ user: 'alice' })).map((k) => k.id)
  t.ok(mine.includes(id), 'listed under alice')
})

t.test('legacy values: an untyped one is a user id; an actor-shaped one owns nothing; the migration rewrites', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const f = gw.fixtures
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('sam', 'acme', 'selfreader')
  await f.user('cli:root', 'acme', 'selfreader')
  const sam = await f.personalKey('sam')
  const root = await f.personalKey('cli:root')
  // records as an older keygate wrote them: the raw value, indexed under it as an "owner"
  const samsBot = await f.botKey('reader', 'acme')
  const rootsBot = await f.botKey('reader', 'acme')
  await gw.client.hset(f.keys.key(samsBot.id), 'created_by', 'sam')
  await gw.client.sadd(f.keys.userKeys('sam'), samsBot.id)
  await gw.client.hset(f.keys.key(rootsBot.id), 'created_by', 'cli:root')
  await gw.client.sadd(f.keys.userKeys('cli:root'), rootsBot.id)

  t.match((await call(gw, 'GET', `/admin/v1/keys/${samsBot.id}`, sam.key)).json(), { id: samsBot.id, created_by: 'user:sam' }, 'an untyped value reads as user:<id>, and sam owns it')
  t.equal((await call(gw, 'GET', `/admin/v1/keys/${rootsBot.id}`, root.key)).status, 404, 'cli:root is an actor: the user named cli:root does not own it')

  const migrated = await runCli(['migrate', 'created-by', '--json'], env)
  t.equal(migrated.code, 0, migrated.stderr)
  const r = JSON.parse(migrated.stdout) as { rewritten: string[], unindexed: string[] }
  t.ok(r.rewritten.includes(samsBot.id), 'the untyped value was rewritten')
  t.same(r.unindexed, [rootsBot.id], 'the actor-owned key left the actor\'s index set')
  t.equal(await gw.client.hget(f.keys.key(samsBot.id), 'created_by'), 'user:sam')
  t.equal(await gw.client.hget(f.keys.key(rootsBot.id), 'created_by'), 'cli:root', 'an actor stays as it is')
  t.equal(await gw.client.sismember(f.keys.userKeys('cli:root'), rootsBot.id), 0)
  t.equal((await call(gw, 'GET', `/admin/v1/keys/${samsBot.id}`, sam.key)).status, 200, 'sam still owns it')

  const again = await runCli(['migrate', 'created-by', '--json'], env)
  t.same(JSON.parse(again.stdout), { rewritten: [], unindexed: [] }, 'idempotent')
})
