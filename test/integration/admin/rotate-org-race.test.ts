/**
 * A personal key takes the org its user has when the key is written, even while an
 * admin moves the user between orgs. Key creation and rotation read the user (org,
 * role, status) and write the key in one WATCHed transaction: a move between the read
 * and the write aborts the write (409, nothing written) instead of leaving a key in an
 * org its user was not in.
 *
 * The race, driven: a second Redis client moves alice between acme and globex in a
 * tight loop (each org held for a millisecond or two), each move one MULTI that also appends a marker to the audit stream; the
 * CLI's actions (a full admin, which may create personal keys) meanwhile create and
 * rotate alice's personal keys. Every key write appends its own audit entry in the same
 * transaction as the key, so the stream orders every move and every key write: replayed
 * in order, each created or rotated key's org must be alice's org at that point.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { AdminError } from '../../../src/admin/model/errors.js'
import { startGateway } from '../../helpers/gateway.js'

const ROUNDS = 40
const WORKERS = 3

t.test('keys created and rotated while their user moves between orgs take the org the user has at the write', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  const actions = f.admin
  const mover = new Redis(gw.redis.url, { maxRetriesPerRequest: 1 })
  mover.on('error', () => {})
  t.teardown(() => { mover.disconnect() })

  const run = { moving: true }
  let moves = 0
  const loop = (async () => {
    while (run.moving) {
      const org = moves % 2 === 0 ? 'globex' : 'acme'
      await mover.multi().hset(f.keys.user('alice'), 'org', org).xadd(f.keys.audit, '*', 'action', 'test.move', 'org', org).exec()
      moves++
      // (held for 0-2 ms, to land inside writes, and every tenth move for 25 ms, so that
      // writes get through even when a loaded machine makes each one slower than 2 ms)
      const hold = moves % 10 === 0 ? 25 : moves % 3
      if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold))
    }
  })()

  let written = 0
  let refused = 0
  const attempt = async (fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn()
      written++
    } catch (err: unknown) {
      // a write the move aborted, or a rotation of a key whose user has left its org
      if (!(err instanceof AdminError) || err.kind !== 'conflict') throw err
      refused++
    }
  }
  try {
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      for (let i = 0; i < ROUNDS; i++) {
        let id: string | undefined
        await attempt(async () => { id = (await actions.createKey({ type: 'personal', user: 'alice' })).result.id })
        if (id !== undefined) await attempt(async () => await actions.rotateKey(id as string, 0))
      }
    }))
  } finally {
    run.moving = false
    await loop
  }
  t.ok(moves > ROUNDS, `the user moved ${moves} times during the run`)
  t.ok(written > 0, `${written} keys were written (${refused} writes refused with a conflict)`)

  // replay the stream: every move, and every key write, in the order Redis applied them
  let org = 'acme'
  let checked = 0
  const wrong: string[] = []
  const keyOrgs = new Map((await f.admin.listKeys({ user: 'alice' })).map((k) => [k.id, k.org]))
  for (const [, list] of await gw.client.xrange(f.keys.audit, '-', '+')) {
    const e: Record<string, string> = {}
    for (let i = 0; i + 1 < list.length; i += 2) e[list[i] as string] = list[i + 1] as string
    if (e.action === 'test.move') org = e.org as string
    if (e.action !== 'key.create' && e.action !== 'key.rotate') continue
    const detail = JSON.parse(e.detail ?? '{}') as { user?: string, new_key?: string }
    const id = e.action === 'key.rotate' ? detail.new_key : e.target?.slice('key:'.length)
    if (id === undefined || !keyOrgs.has(id)) continue
    checked++
    if (keyOrgs.get(id) !== org) wrong.push(`${e.action} ${id}: key in ${keyOrgs.get(id) ?? ''}, user in ${org}`)
  }
  t.equal(checked, written, 'every key written is in the replay')
  t.same(wrong, [], 'no key came out in an org its user was not in when it was written')
})
