/**
 * The key lifecycle end to end, through the real `keygate` executable and the
 * gateway on one Redis: create -> use (200) -> revoke or deactivate -> 401;
 * rotation with a grace period; listing with last use; role deletion guards; the
 * audit trail. Nothing printed by list/show ever holds a secret or a hash.
 *
 * Every command is its own `keygate` process (about half a second of CPU each), so
 * the tests share one gateway and run side by side, each on its own keys, users and
 * roles; the audit trail, which holds what they all did, is read once they are done.
 * `keygate check` against the gateway: check-agrees-with-the-gateway.test.ts.
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { eventually, startGateway } from '../../helpers/gateway.js'

interface Created { id: string, key: string, type: string, replaces?: string, replaces_expires_at?: string, expires_at?: string }

t.test('key lifecycle through the CLI and the gateway', { jobs: 2 }, async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const cli = async (...args: string[]): Promise<unknown> => {
    const r = await runCli([...args, '--json'], env)
    if (r.code !== 0) throw new Error(`keygate ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}`)
    return JSON.parse(r.stdout)
  }
  const status = async (key: string): Promise<number> => (await gw.get('/api/v1/users', key)).status
  const changes: Array<Promise<unknown>> = []

  changes.push(t.test('create, use, revoke: 401 within 1 s', { buffered: true }, async (t) => {
    const k = await cli('keys', 'create', '--type', 'personal', '--user', 'alice', '--name', 'laptop') as Created
    t.equal(await status(k.key), 200)
    const revoked = await cli('keys', 'revoke', k.id) as { changed: boolean }
    t.equal(revoked.changed, true)
    const ms = await eventually(async () => await status(k.key) === 401, 1500)
    t.ok(ms >= 0 && ms <= 1500, `revocation honoured in ${ms} ms`)
    t.equal((await cli('keys', 'revoke', k.id) as { changed: boolean }).changed, false, 'revoking twice changes nothing')
    const shown = await cli('keys', 'show', k.id) as Record<string, string>
    t.equal(shown.status, 'revoked')
    t.match(shown.revoked_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  }))

  changes.push(t.test('deactivate stops personal keys, activate restores them; BOT keys are unaffected', { buffered: true }, async (t) => {
    const personal = await cli('keys', 'create', '--type', 'personal', '--user', 'bob') as Created
    const bot = await cli('keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--created-by', 'bob') as Created
    t.equal(await status(personal.key), 200)
    await cli('users', 'deactivate', 'bob')
    t.ok(await eventually(async () => await status(personal.key) === 401, 1500) >= 0, 'personal key refused')
    t.equal(await status(bot.key), 200, 'the BOT key bob created keeps working')
    await cli('users', 'activate', 'bob')
    t.ok(await eventually(async () => await status(personal.key) === 200, 1500) >= 0, 'personal key restored')
    const users = await cli('users', 'list', '--org', 'acme') as Array<{ id: string, status: string }>
    t.same(users.map((u) => u.id).sort(), ['alice', 'bob'])
  }))

  changes.push(t.test('rotate: both keys work during the grace period, only the new one after it', { buffered: true }, async (t) => {
    const old = await cli('keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--name', 'ci') as Created
    const rotated = await cli('keys', 'rotate', old.id, '--grace', '3s') as Created
    t.equal(rotated.replaces, old.id)
    t.equal(rotated.type, 'bot')
    t.not(rotated.key, old.key)
    const graceEnd = Date.parse(rotated.replaces_expires_at ?? '')
    t.ok(graceEnd > Date.now() && graceEnd <= Date.now() + 3500, 'replaces_expires_at is about now + grace')
    t.equal(await status(old.key), 200, 'old key inside the grace period')
    t.equal(await status(rotated.key), 200, 'new key')
    const newShown = await cli('keys', 'show', rotated.id) as Record<string, string>
    t.equal(newShown.name, 'ci', 'same name')
    t.equal(newShown.role, 'reader', 'same role')
    t.equal(newShown.org, 'acme', 'same org')
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, graceEnd - Date.now())))
    const refusedAfter = await eventually(async () => await status(old.key) === 401, 600)
    t.ok(refusedAfter >= 0, `old key after the grace period (refused ${refusedAfter} ms past its end)`)
    t.equal(await status(rotated.key), 200, 'new key after the grace period')
    const oldShown = await cli('keys', 'show', old.id) as Record<string, string>
    t.equal(oldShown.status, 'expired')
    t.equal(oldShown.replaced_by, rotated.id)
    const again = await runCli(['keys', 'rotate', 'ZZZZZZZZZZZZZZZZ'], env)
    t.equal(again.code, 1, 'rotating an unknown key fails')
  }))

  changes.push(t.test('list and show: filters, last use, and never a secret or a hash', { buffered: true }, async (t) => {
    const k = await cli('keys', 'create', '--type', 'personal', '--user', 'carol', '--expires-in', '90d') as Created
    t.equal(await status(k.key), 403, 'carol may not read users, but the use still counts as authenticated')
    await gw.get('/api/v1/orgs/globex/things', k.key)
    await gw.app.usage.flush()
    const byUser = await cli('keys', 'list', '--user', 'carol') as Array<Record<string, string>>
    t.equal(byUser.length, 1)
    t.equal(byUser[0]?.id, k.id)
    t.match(byUser[0]?.last_used_at, /^\d{4}-\d\d-\d\dT/, 'last use recorded by the gateway')
    t.ok(byUser[0]?.expires_at !== undefined)
    const byOrg = await cli('keys', 'list', '--org', 'globex') as Array<Record<string, string>>
    t.same(byOrg.map((x) => x.id), [k.id])
    const all = JSON.stringify(await cli('keys', 'list'))
    t.notOk(all.includes(k.key.slice(20, 40)), 'no secret in a listing')
    t.notOk(/"hash"|[0-9a-f]{64}/.test(all), 'no hash in a listing')
    const human = await runCli(['keys', 'list', '--user', 'carol'], env)
    t.match(human.stdout, /ID\s+TYPE\s+OWNER/)
    t.match(human.stdout, new RegExp(k.id))
  }))

  changes.push(t.test('--unused-for finds stale keys', { buffered: true }, async (t) => {
    const fresh = await cli('keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'stale-test') as Created
    const staleId = (await cli('keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'stale-test') as Created).id
    const old = new Date(Date.now() - 100 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z')
    await gw.client.hset(gw.fixtures.keys.key(staleId), 'created_at', old)
    await gw.client.hset(gw.fixtures.keys.usage, staleId, old)
    const stale = await cli('keys', 'list', '--org', 'stale-test', '--unused-for', '90d') as Array<{ id: string }>
    t.same(stale.map((x) => x.id), [staleId])
    t.notOk(stale.some((x) => x.id === fresh.id))
    const named = await cli('keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'stale-test', '--name', 'Nightly Export') as Created
    const found = await cli('keys', 'list', '--org', 'stale-test', '--search', 'nightly exp') as Array<{ id: string }>
    t.same(found.map((x) => x.id), [named.id], '--search finds by name, in any case')
  }))

  changes.push(t.test('roles: list, and delete refused while referenced (naming the references) unless --force', { buffered: true }, async (t) => {
    await cli('roles', 'put', 'temp', '--permissions', 'users:read', '--description', 'temporary')
    const roles = await cli('roles', 'list') as Array<{ name: string, permissions: string[] }>
    t.same(roles.find((r) => r.name === 'temp')?.permissions, ['users:read'])
    await cli('users', 'put', 'dave', '--org', 'initech', '--role', 'temp')
    const bot = await cli('keys', 'create', '--type', 'bot', '--role', 'temp', '--org', 'initech') as Created
    const refused = await runCli(['roles', 'delete', 'temp'], env)
    t.equal(refused.code, 1)
    t.match(refused.stderr, /dave/)
    t.match(refused.stderr, new RegExp(bot.id))
    t.equal(await gw.client.exists(gw.fixtures.keys.role('temp')), 1, 'nothing deleted')
    const forced = await cli('roles', 'delete', 'temp', '--force') as { deleted: boolean }
    t.equal(forced.deleted, true)
    t.equal(await gw.client.exists(gw.fixtures.keys.role('temp')), 0)
    t.ok(await eventually(async () => await status(bot.key) === 403, 1500) >= 0, 'a BOT key whose role is gone has no permissions')
  }))

  // the trail of what the tests above did
  await Promise.all(changes)
  await t.test('audit: every change, with actor, action, target and result', async (t) => {
    const entries = await cli('audit', '--since', '1h') as Array<{ action: string, target: string, actor: string, result: string }>
    const actions = new Set(entries.map((e) => e.action))
    for (const a of ['key.create', 'key.revoke', 'key.rotate', 'user.deactivate', 'user.activate', 'role.put', 'role.delete', 'user.put']) t.ok(actions.has(a), a)
    t.ok(entries.every((e) => e.actor.startsWith('cli:') || e.actor === 'test'))
    t.ok(entries.every((e) => e.result === 'ok'), 'the trail of changes holds changes only')
    const refused = await cli('audit', '--refused', '--since', '1h') as Array<{ action: string, actor: string, count: number, first: { result: string }, last: { result: string } }>
    t.ok(refused.some((e) => e.action === 'role.delete' && e.count >= 1 && e.last.result.startsWith('error:')), 'a refused change is audited too, counted apart')
    t.notOk(JSON.stringify([entries, refused]).match(/kg_[0-9A-Za-z]{16}_[0-9A-Za-z]{38}/), 'no key in the audit trail')
    const none = await cli('audit', '--since', '1s') as unknown[]
    t.ok(none.length < entries.length, '--since filters')
    const newest = await cli('audit', '--since', '1h', '--limit', '2') as Array<{ id: string }>
    t.same(newest.map((e) => e.id), entries.slice(-2).map((e) => (e as unknown as { id: string }).id), '--limit: the newest n, oldest first')
    const newestFirst = await cli('audit', '--since', '1h', '--newest-first') as Array<{ id: string }>
    t.same(newestFirst.map((e) => e.id), entries.map((e) => (e as unknown as { id: string }).id).reverse(), '--newest-first: the same, newest first')
  })
})
