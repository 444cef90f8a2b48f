/**
 * `keygate init` on an empty registry makes the first admin: its key signs in to the
 * admin API as an admin of every org. Run again it refuses and writes nothing; with
 * --force it makes a new key for the same user and changes nothing else.
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'

const KEY = /^ {2}(kg_\S+)$/m

t.test('keygate init: the first admin, once; --force a new key', async (t) => {
  const gw = await startGateway(t, { seed: false })
  const env = cliEnv(gw)

  const first = await runCli(['init', '--email', 'ops@example.com'], env)
  t.equal(first.code, 0, `exit 0 (${first.stderr})`)
  const key = KEY.exec(first.stdout)?.[1]
  t.ok(key, 'the key is printed')
  t.match(first.stdout, /Created role keygate-admin \(keygate:admin\); created user admin \(org admin\)/)

  const session = await gw.admin('GET', '/admin/v1/session', { Authorization: `Bearer ${key ?? ''}` })
  t.equal(session.status, 200, 'the key signs in to the admin API')
  t.match(JSON.parse(session.body), { scope: 'admin' }, 'as an admin of every org')
  const roles = await gw.admin('GET', '/admin/v1/roles', { Authorization: `Bearer ${key ?? ''}` })
  t.equal(roles.status, 200, 'and may do what only keygate:admin may (the roles)')

  // the keys as written (not their last use, which the sign-ins above record)
  const written = async (): Promise<unknown> => (JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as
    Array<{ id: string, status: string, expires_at?: string }>).map(({ id, status, expires_at: e }) => [id, status, e])
  const keysBefore = await written()
  const again = await runCli(['init'], env)
  t.equal(again.code, 1, 'run again: refused')
  t.match(again.stderr, /initialised already.*--force/)
  t.equal(KEY.exec(again.stdout), null, 'no key printed')
  t.same(await written(), keysBefore, 'nothing written')

  const forced = await runCli(['init', '--force', '--json'], env)
  t.equal(forced.code, 0, `--force: exit 0 (${forced.stderr})`)
  const out = JSON.parse(forced.stdout) as { role_created: boolean, user_created: boolean, key: { key: string, user: string } }
  t.same([out.role_created, out.user_created, out.key.user], [false, false, 'admin'], 'role and user kept, a key for admin')
  t.not(out.key.key, key, 'a new key')
  t.equal((await gw.admin('GET', '/admin/v1/session', { Authorization: `Bearer ${out.key.key}` })).status, 200, 'which signs in too')
  t.equal((await gw.admin('GET', '/admin/v1/session', { Authorization: `Bearer ${key ?? ''}` })).status, 200,
    'the first key still works (revoke it with keygate keys revoke)')

  const taken = await runCli(['init', '--force', '--role', 'viewer-like', '--user', 'admin'], env)
  t.equal(taken.code, 1, 'a user that exists with another role is not made over')
  t.match(taken.stderr, /user admin exists with role keygate-admin/)
})
