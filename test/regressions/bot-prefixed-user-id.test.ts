/**
 * The signed assertion's `sub` is a personal key's user id, or `bot:<keyId>` for a BOT
 * key. A user id could itself be `bot:<keyId>`, so that user's personal keys were
 * asserted with the very `sub` of that BOT key; an org admin could create such a user.
 *
 * Now a user id starting with `bot:` (in any case) is refused with 400, naming the field
 * `id`, by the one write check every front end runs: the admin API and the CLI.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'
import { cliEnv, runCli } from '../helpers/cli.js'

const TOKEN = 'test-admin-token-0123456789abcdef'

t.test('a user id starting with bot: is refused, on the admin API and the CLI', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'users:*', 'orgs:read'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = await f.personalKey('oscar')
  const bot = await f.botKey('reader', 'acme')

  for (const [who, credential] of [['the admin token', TOKEN], ['an org admin', oscar.key]] as const) {
    for (const id of [`bot:${bot.id}`, `BOT:${bot.id}`, 'Bot:x']) {
      const res = await call(gw, 'PUT', `/admin/v1/users/${encodeURIComponent(id)}`, credential, { org: 'acme', role: 'reader' })
      t.equal(res.status, 400, `${who}: ${id} refused`)
      t.match(res.json(), { error: { code: 'bad_request', details: [{ field: 'id', reason: /starting with "bot:"/ }] } }, `${who}: ${id}: the detail names the field`)
    }
  }
  t.equal((await call(gw, 'PUT', '/admin/v1/users/robot:1', TOKEN, { org: 'acme', role: 'reader' })).status, 201, 'bot: elsewhere in the id is fine')

  const env = cliEnv(gw)
  const cli = await runCli(['users', 'put', `bot:${bot.id}`, '--org', 'acme', '--role', 'reader', '--json'], env)
  t.not(cli.code, 0, 'the CLI refuses it')
  const err = (JSON.parse(cli.stderr) as { error: { code: string, details: Array<{ field?: string, reason: string }> } }).error
  t.match(err, { code: 'bad_request', details: [{ field: 'id', reason: /starting with "bot:"/ }] })

  t.same(
    (await f.admin.listUsers()).map((u) => u.id).filter((id) => id.toLowerCase().startsWith('bot:')),
    [],
    'no such user was written'
  )
})
