/**
 * The store took a key creation as it came: a role or an org given with a personal key
 * was dropped without a word, and a BOT key's user likewise, so a caller that skipped
 * the front ends' checks (the demo, a script on the store) got a key other than the
 * one it asked for. The creation rules (src/admin/policy/key-input.ts) are the policy's,
 * which every admin action asks, whoever holds the actions (a script, the demo, a front
 * end), with the same messages every front end shows, and the refusal is audited.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { AdminError } from '../../src/admin/model/errors.js'
import { fullAdmin } from '../helpers/fixtures.js'
import { redisKeys } from '../../src/registry/redis-keys.js'
import { startRedis, uniquePrefix } from '../helpers/redis.js'

t.test('the admin actions refuse owner fields a key type does not take, and write nothing', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const store = fullAdmin(client, keys, 'kg_', 'cli:root')
  await store.putRole('reader', ['users:read'])
  await store.putRole('writer', ['users:write'])
  await store.putUser('alice', { org: 'acme', role: 'reader' })

  const cases = [
    ['a personal key with a role', { type: 'personal', user: 'alice', role: 'writer' }, /personal key takes its org and role from its user/],
    ['a personal key with an org', { type: 'personal', user: 'alice', org: 'globex' }, /personal key takes its org and role from its user/],
    ['a BOT key with a user', { type: 'bot', role: 'reader', org: 'acme', user: 'alice' }, /BOT key has no user/],
    ['a BOT key without an org', { type: 'bot', role: 'reader' }, /BOT key needs an org/]
  ] as const
  for (const [what, input, message] of cases) {
    const err = await store.createKey(input).then(() => undefined, (e: unknown) => e)
    t.ok(err instanceof AdminError && err.kind === 'invalid', `${what}: refused as invalid input`)
    t.match((err as Error).message, message, `${what}: says why`)
    t.notMatch((err as Error).message, /--/, `${what}: names no CLI flag`)
  }
  t.same(await store.listKeys(), [], 'no key was written')
  const refusals = (await store.readRefusals({ limit: 100 })).entries
  t.equal(refusals.filter((r) => r.action === 'key.create').reduce((n, r) => n + r.count, 0), cases.length, 'each refusal is audited')
})
