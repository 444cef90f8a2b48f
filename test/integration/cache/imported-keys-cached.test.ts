/**
 * Imported keys (docs/imports.md) are cached like keygate's own (docs/cache.md), against
 * real Redis and the real gateway:
 *
 * - a cached imported key: many requests, exactly one Redis read (MONITOR on the
 *   gateway's connection);
 * - two instances share one Redis; revoke, rotate (the old token refused once its grace
 *   is over), restrict (scope: 403 outside it; allowed_cidrs: 403 address_not_allowed),
 *   a user's deactivation and a role's change reach both within the bound the native
 *   propagation test uses (revocation-propagates.test.ts);
 * - Redis unreachable: the cached key is served inside the stale window, an uncached
 *   one gets 503 within 1 s (fail closed), as for native keys;
 * - an unknown foreign token is cached as unknown (retrying it costs nothing), those
 *   entries stay within `cache.negative_max_entries`, and importing the token is seen
 *   at once all the same;
 * - an address whose unknown-key budget forged tokens spent keeps using its imported
 *   key, from the cache, and when its lookup must be read again.
 */
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'
import { startPrivateRedis, startRedis, uniquePrefix } from '../../helpers/redis.js'

/** (usage counting off: its flush, a script call on the same connection, must not land in a counted window) */
const ON = 'keys: { accept_imported: true }\nusage: { enabled: false }\n'
/** the native propagation test's bound (revocation-propagates.test.ts): a change not seen by then is lost */
const ARRIVAL_LIMIT_MS = 3000

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')
/** a Kong key-auth style key: 32 hex characters */
const foreignToken = (): string => randomBytes(16).toString('hex')

/** Imports `token` through the same admin actions the CLI uses; returns its key id. */
async function importKey (gw: TestGateway, token: string, owner: { user: string } | { role: string, org: string }): Promise<string> {
  const input = 'user' in owner ? { type: 'personal' as const, user: owner.user } : { type: 'bot' as const, ...owner }
  const { result: [imported] } = await gw.fixtures.admin.importKeys([{
    line: 1,
    place: 'line 1',
    ...input,
    sha256: sha256(token),
    from: 'key'
  }])
  return (imported as { id: string }).id
}

async function call (gw: TestGateway, method: string, token: string, host?: string): Promise<Awaited<ReturnType<typeof send>>> {
  return await send(gw.port, method, '/api/v1/users', { Authorization: `Bearer ${token}`, ...method === 'POST' ? { 'Content-Type': 'application/json' } : {} }, method === 'POST' ? '{}' : undefined, host === undefined ? {} : { host })
}

/** Polls until `method` with `token` gets `status`: ms from `since`, or -1 past the bound. */
async function untilStatus (gw: TestGateway, method: string, token: string, status: number, since: number): Promise<number> {
  while (Date.now() - since < ARRIVAL_LIMIT_MS) {
    if ((await call(gw, method, token)).status === status) return Date.now() - since
  }
  return -1
}

t.test('a cached imported key: many requests, one Redis read', async (t) => {
  const gw = await startGateway(t, { yaml: ON })
  const token = foreignToken()
  const id = await importKey(gw, token, { user: 'alice' })
  const N = 50
  const { result, commands } = await watchGatewayRedis(gw, async () => {
    const statuses: number[] = []
    for (let i = 0; i < N; i++) statuses.push((await call(gw, 'GET', token)).status)
    return statuses
  })
  t.same(new Set(result), new Set([200]), `all ${N} requests allowed`)
  t.equal(gw.upstream.last()?.headers['x-auth-key-id'], id)
  t.equal(commands.length, 1, `${N} requests, exactly one Redis command (${commands.map((c) => c.split(' ')[0]).join(', ')})`)
  t.match(commands[0], /^eval(sha)? /i, 'the one read: the lookup and the chain in one script')
  t.ok(commands[0]?.includes(`imported:${sha256(token)}`), 'named by the token\'s SHA-256')
  t.notOk(commands.some((c) => c.includes(token)), 'the token itself never goes to Redis')

  const again = await watchGatewayRedis(gw, async () => await call(gw, 'GET', token))
  t.equal(again.result.status, 200)
  t.same(again.commands, [], 'once cached, no command at all')
})

t.test('two instances: every change to an imported key arrives within the bound', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const gws: TestGateway[] = []
  for (let i = 0; i < 2; i++) gws.push(await startGateway(t, { redis, prefix, seed: i === 0, yaml: ON }))
  const [first] = gws as [TestGateway]
  const { admin } = first.fixtures

  /** warms each instance with `token` (expecting `status`) and checks the next request is served from its cache */
  const warm = async (token: string, method = 'GET', status = 200): Promise<void> => {
    for (const gw of gws) {
      t.equal((await call(gw, method, token)).status, status, 'warm')
      const { commands } = await watchGatewayRedis(gw, async () => await call(gw, method, token))
      t.same(commands, [], `instance ${gw.port}: served from its cache`)
    }
  }
  const arrives = async (what: string, method: string, token: string, status: number, since: number): Promise<void> => {
    const ms = await Promise.all(gws.map(async (gw) => await untilStatus(gw, method, token, status, since)))
    t.ok(ms.every((m) => m >= 0), `${what}: both instances within ${ARRIVAL_LIMIT_MS} ms (${ms.join(', ')} ms)`)
  }

  // revoke
  const revoked = foreignToken()
  const revokedId = await importKey(first, revoked, { role: 'reader', org: 'acme' })
  await warm(revoked)
  await admin.revokeKey(revokedId)
  await arrives('revoke', 'GET', revoked, 401, Date.now())
  t.equal((await first.logOf(await call(first, 'GET', revoked)))?.reason, 'key_revoked')

  // rotate: a native key, and the imported token refused once its grace is over
  const rotated = foreignToken()
  const rotatedId = await importKey(first, rotated, { user: 'alice' })
  await warm(rotated)
  const graceMs = 1000
  const native = await admin.rotateKey(rotatedId, graceMs)
  for (const gw of gws) t.equal((await call(gw, 'GET', native.key)).status, 200, 'the native key works')
  await arrives('rotate (a grace of 1 s)', 'GET', rotated, 401, Date.now())
  t.equal((await first.logOf(await call(first, 'GET', rotated)))?.reason, 'key_expired', 'refused as past its grace')

  // restrict: scope, then addresses
  const bob = foreignToken()
  const bobId = await importKey(first, bob, { user: 'bob' }) // writer: users:*
  await warm(bob, 'POST')
  await admin.restrictKey(bobId, { scope: ['users:read'] })
  await arrives('scope', 'POST', bob, 403, Date.now())
  const outside = await call(first, 'POST', bob)
  t.equal((await first.logOf(outside))?.reason, 'missing_permission', 'outside its scope: 403')
  for (const gw of gws) t.equal((await call(gw, 'GET', bob)).status, 200, 'inside its scope: allowed')
  await admin.restrictKey(bobId, { allowedCidrs: ['10.0.0.0/8'] })
  await arrives('allowed_cidrs', 'GET', bob, 403, Date.now())
  const elsewhere = await call(first, 'GET', bob)
  t.match(elsewhere.json(), { error: { code: 'forbidden' } })
  t.equal((await first.logOf(elsewhere))?.reason, 'address_not_allowed')
  await admin.restrictKey(bobId, { allowedCidrs: ['127.0.0.0/8'] })
  await arrives('allowed_cidrs widened', 'GET', bob, 200, Date.now())

  // a user's deactivation, and a role's change
  const dave = foreignToken()
  await first.fixtures.user('dave', 'acme', 'reader')
  await importKey(first, dave, { user: 'dave' })
  await warm(dave)
  await admin.setUserStatus('dave', 'deactivated')
  await arrives('user deactivated', 'GET', dave, 401, Date.now())
  t.equal((await first.logOf(await call(first, 'GET', dave)))?.reason, 'user_deactivated')

  await first.fixtures.role('flip', ['users:read'])
  const bot = foreignToken()
  await importKey(first, bot, { role: 'flip', org: 'acme' })
  await warm(bot)
  await first.fixtures.role('flip', ['orgs:read'])
  await arrives('role changed', 'GET', bot, 403, Date.now())
  await first.fixtures.role('flip', ['users:read'])
  await arrives('role changed back', 'GET', bot, 200, Date.now())
})

t.test('unknown foreign tokens: cached as unknown, bounded, and an import is seen at once', async (t) => {
  const MAX_NEGATIVE = 50
  const gw = await startGateway(t, { yaml: ON + `cache: { negative_max_entries: ${MAX_NEGATIVE}, negative_ttl_ms: 60000 }\n` })
  const token = foreignToken()
  t.equal((await call(gw, 'GET', token)).status, 401, 'unknown')
  const retried = await watchGatewayRedis(gw, async () => {
    for (let i = 0; i < 10; i++) t.equal((await call(gw, 'GET', token)).status, 401)
  })
  t.same(retried.commands, [], 'the same unknown token again: from the cache, no command')

  for (let i = 0; i < MAX_NEGATIVE * 3; i++) t.equal((await call(gw, 'GET', foreignToken())).status, 401)
  t.ok(gw.app.cache.negativeSize <= MAX_NEGATIVE, `unknown tokens held within cache.negative_max_entries (${gw.app.cache.negativeSize})`)
  t.ok(gw.app.cache.negativeSize > 0, '(and they are held)')

  // importing a token that was looked up as unknown: push invalidation drops the negative entry
  const late = foreignToken()
  t.equal((await call(gw, 'GET', late)).status, 401, 'not imported yet')
  const id = await importKey(gw, late, { user: 'alice' })
  t.ok(await untilStatus(gw, 'GET', late, 200, Date.now()) >= 0, 'imported: allowed without waiting for the negative TTL')
  t.equal(gw.upstream.last()?.headers['x-auth-key-id'], id)
})

t.test('an address whose unknown-key budget forged foreign tokens spent still uses its imported key', async (t) => {
  const gw = await startGateway(t, { yaml: ON + 'limits: { unknown_keys_per_peer: { per_second: 0.01, burst: 20 } }\n' })
  const token = foreignToken()
  const id = await importKey(gw, token, { user: 'alice' })
  t.equal((await call(gw, 'GET', token)).status, 200, 'cached')
  const { result: forged, commands } = await watchGatewayRedis(gw, async () => {
    const out: number[] = []
    for (let i = 0; i < 40; i++) out.push((await call(gw, 'GET', foreignToken())).status)
    return out
  })
  t.same(new Set(forged), new Set([401]))
  t.equal(commands.length, 20, 'the budget let 20 forged tokens reach Redis, one read each')
  const limited = await call(gw, 'GET', foreignToken())
  t.equal((await gw.logOf(limited))?.reason, 'unknown_key_limited', 'the budget is spent')

  const again = await watchGatewayRedis(gw, async () => await call(gw, 'GET', token))
  t.equal(again.result.status, 200, 'the imported key: still allowed')
  t.same(again.commands, [], 'from the cache')
  // its lookup dropped (an edit of the lookup, as redis-cli would): read again, not limited
  const before = gw.app.cache.counters.invalidations
  await gw.client.set(`${gw.prefix}imported:${sha256(token)}`, id)
  for (let i = 0; i < 300 && gw.app.cache.counters.invalidations === before; i++) await sleep(10)
  t.ok(gw.app.cache.counters.invalidations > before, 'the lookup was invalidated')
  const reread = await watchGatewayRedis(gw, async () => await call(gw, 'GET', token))
  t.equal(reread.result.status, 200, 'a lookup the cache held before is not charged to the spent budget')
  t.equal(reread.commands.length, 1, 'read again: one command')
})

t.test('Redis unreachable: a cached imported key inside the stale window, an uncached token 503 within 1 s', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(async () => { await redis.stop() })
  const gw = await startGateway(t, { redis, yaml: ON + 'cache: { ttl_ms: 100, negative_ttl_ms: 100, stale_if_error_s: 30 }\n' })
  const cached = foreignToken()
  const uncached = foreignToken()
  await importKey(gw, cached, { user: 'alice' })
  await importKey(gw, uncached, { user: 'alice' })
  t.equal((await call(gw, 'GET', cached)).status, 200, 'cached')

  redis.kill('SIGKILL')
  await sleep(300) // past ttl_ms: nothing is fresh any more
  const start = Date.now()
  const refused = await call(gw, 'GET', uncached)
  const ms = Date.now() - start
  t.equal(refused.status, 503, 'an imported key that is not cached: 503, fail closed')
  t.ok(ms < 1200, `answered in ${ms} ms (bound 1000 ms + margin)`)
  for (let i = 0; i < 3; i++) t.equal((await call(gw, 'GET', cached)).status, 200, 'the cached one: served inside the stale window')
})

t.test('push invalidation lost and back: the cache is flushed and the imported key read again ahead of its requests', async (t) => {
  const gw = await startGateway(t, { yaml: ON })
  const token = foreignToken()
  await importKey(gw, token, { user: 'alice' })
  t.equal((await call(gw, 'GET', token)).status, 200, 'cached')
  const list = await gw.client.client('LIST') as string
  const trackingId = /id=(\d+)/.exec(list.split('\n').find((l) => l.includes('name=keygate-invalidation')) ?? '')?.[1]
  t.ok(trackingId, 'the tracking connection is visible to Redis')
  const { since } = gw.app.tracking
  const refilled = gw.app.refill.done
  await gw.client.client('KILL', 'ID', trackingId as string)
  for (let i = 0; i < 500 && !(gw.app.tracking.up && gw.app.tracking.since > since && gw.app.refill.done > refilled && gw.app.refill.size === 0); i++) await sleep(10)
  t.ok(gw.app.tracking.since > since, 'tracking came back (and the cache was flushed)')
  t.ok(gw.app.refill.done > refilled, 'the refill read the imported key again')
  const after = await watchGatewayRedis(gw, async () => await call(gw, 'GET', token))
  t.equal(after.result.status, 200)
  t.same(after.commands, [], 'its first request after the flush is served from the cache')
})
