/**
 * A race when an org admin created a personal key: the scope rules checked that the
 * user was in the org admin's org, then the store read the user again, without WATCH,
 * before writing the key. While an admin moved the user between orgs, some of the keys
 * acme's org admin created came out in globex, and worked there.
 *
 * Now an org admin never creates a personal key for another user, whatever org the
 * user is in at the moment (403 in its org, 404 outside it), and the store reads the
 * user and writes the key in one WATCHed transaction (test/integration/admin/rotate-org-race.test.ts).
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const ATTEMPTS = 60

t.test('acme\'s org admin creates personal keys for alice while an admin moves her between acme and globex', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'users:*', 'orgs:read'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = await f.personalKey('oscar')
  const mover = new Redis(gw.redis.url, { maxRetriesPerRequest: 1 })
  mover.on('error', () => {})
  t.teardown(() => { mover.disconnect() })

  const run = { moving: true, moves: 0 }
  const loop = (async () => {
    while (run.moving) {
      const org = run.moves % 2 === 0 ? 'globex' : 'acme'
      await mover.multi().hset(f.keys.user('alice'), 'org', org).srem(f.keys.orgUsers(org === 'acme' ? 'globex' : 'acme'), 'alice').sadd(f.keys.orgUsers(org), 'alice').exec()
      run.moves++
      await new Promise((resolve) => setTimeout(resolve, run.moves % 2))
    }
  })()
  const statuses = new Map<number, number>()
  try {
    for (let i = 0; i < ATTEMPTS; i++) {
      const res = await call(gw, 'POST', '/admin/v1/keys', oscar.key, { type: 'personal', user: 'alice' })
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
  } finally {
    run.moving = false
    await loop
  }
  t.ok(run.moves > 10, `alice moved ${run.moves} times`)
  const created = (await f.admin.listKeys({ user: 'alice' })).filter((k) => k.created_by === 'user:oscar')
  t.same(created.filter((k) => k.org !== 'acme').map((k) => `${k.id} in ${k.org}`), [], 'no key of alice made by acme\'s org admin is in another org')
  t.equal(created.length, 0, 'acme\'s org admin made no personal key for alice at all')
  t.same([...statuses.keys()].filter((s) => s !== 403 && s !== 404), [], `every attempt refused (${JSON.stringify(Object.fromEntries(statuses))})`)
})
