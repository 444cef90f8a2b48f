/**
 * Security review, finding 4: an org admin's BOT keys minted more org-admin BOT keys,
 * and offboarding missed them. Keys made by a BOT key recorded only `created_by:
 * key:<id>`, so `users deactivate --revoke-created-keys` listed and revoked the first
 * generation alone; the second stayed live (up to 90 days) and could mint more.
 *
 * A key records the human at the root of its chain of creators (`owner: user:<id>`)
 * beside the key that made it, and offboarding revokes the whole tree.
 */
import t, { type Test } from 'tap'
import { adminCall as call, eventually, startGateway } from '../helpers/gateway.js'
import { cliEnv, runCli } from '../helpers/cli.js'

interface Created { id: string, key: string }

async function chain (gw: Awaited<ReturnType<typeof startGateway>>, t: Test, user: string): Promise<Created[]> {
  const f = gw.fixtures
  await f.user(user, 'acme', 'orgadmin')
  const human = await f.personalKey(user)
  const made: Created[] = []
  let maker = human.key
  for (let generation = 1; generation <= 3; generation++) {
    const res = await call(gw, 'POST', '/admin/v1/keys', maker, { type: 'bot', role: 'orgadmin', name: `g${generation}` })
    t.equal(res.status, 201, `generation ${generation} created`)
    const k = res.json() as Created
    made.push(k)
    maker = k.key
  }
  return made
}

t.test('three generations of BOT keys from one org admin: each records its root, offboarding revokes them all',
  async (t) => {
    const gw = await startGateway(t)
    const f = gw.fixtures
    await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
    await f.role('boss', ['keygate:admin'])
    await f.user('root', 'acme', 'boss')
    const root = (await f.personalKey('root')).key
    const [g1, g2, g3] = await chain(gw, t, 'olga') as [Created, Created, Created]

    for (const [k, maker] of [[g1, 'user:olga'], [g2, `key:${g1.id}`], [g3, `key:${g2.id}`]] as const) {
      const view = (await call(gw, 'GET', `/admin/v1/keys/${k.id}`, root)).json()
      t.match(view, { created_by: maker, owner: 'user:olga' }, `${k.id}: made by ${maker}, owned by olga`)
    }
    const listed = (await call(gw, 'GET', '/admin/v1/keys?user=olga', root)).json() as { keys: Created[] }
    t.same(listed.keys.filter((k) => [g1.id, g2.id, g3.id].includes(k.id)).length, 3, 'olga\'s keys list all three')

    const res = await call(gw, 'POST', '/admin/v1/users/olga/deactivate', root, { revoke_created_keys: true })
    t.equal(res.status, 200)
    const body = res.json() as { revoked_keys: string[], created_keys: string[] }
    t.same(body.revoked_keys.slice().sort(), [g1.id, g2.id, g3.id].sort(), 'the whole tree revoked')
    t.same(body.created_keys, [])
    for (const k of [g1, g2, g3]) {
      t.equal(await gw.client.hget(f.keys.key(k.id), 'status'), 'revoked', `${k.id} revoked`)
      t.ok(await eventually(async () => (await gw.get('/api/v1/open/x', k.key)).status === 401) >= 0, 'refused')
    }
  })

t.test('the CLI reports and revokes the whole tree too', async (t) => {
  const gw = await startGateway(t)
  await gw.fixtures.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  const made = await chain(gw, t, 'otto')
  const reported = await runCli(['users', 'deactivate', 'otto', '--json'], cliEnv(gw))
  t.equal(reported.code, 0, reported.stderr)
  t.same((JSON.parse(reported.stdout) as { created_keys: string[] }).created_keys.slice().sort(),
    made.map((k) => k.id).sort(), 'every generation reported')
})
