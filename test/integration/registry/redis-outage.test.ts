/**
 * Registry outage and readiness (docs/cache.md, docs/security.md), against a private
 * redis-server that is killed (SIGKILL: the connection drops) or frozen
 * (SIGSTOP: a hung server, the connection stays open and nothing answers).
 *
 * - Fail closed: a key that is not cached gets `503 service_unavailable`
 *   within 1 s; never 200, never 500.
 * - Cached decisions are served for at most `cache.stale_if_error_s` seconds
 *   after Redis became unreachable; within that window they are served;
 *   0 turns it off.
 * - `/readyz` turns non-ready within 5 s of losing Redis and ready again within
 *   10 s of it coming back, without restarting the gateway.
 * - A key revoked before the outage is never let through during it.
 *
 * These tests always start their own redis-server (even when REDIS_URL names a
 * shared one), because they kill, freeze and restart it. Each case has its own
 * redis-server and gateway, and most of its time is waiting for the clock, so the
 * cases of a test run side by side.
 */
import t from 'tap'
import type { Test } from 'tap'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { startPrivateRedis, type TestRedis } from '../../helpers/redis.js'

/** The documented bounds (docs/cache.md), plus a modest margin for scheduling and the raw client. */
const UNAVAILABLE_WITHIN_MS = 1000 + 200
const NOT_READY_WITHIN_MS = 5000 + 300
const READY_AGAIN_WITHIN_MS = 10_000 + 300

const UNAVAILABLE_BODY = { error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 } }

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** A redis-server of our own, whatever REDIS_URL says (SIGCONT first: a test may leave it stopped). */
async function privateRedis (t: Test): Promise<TestRedis> {
  const redis = await startPrivateRedis()
  t.teardown(async () => {
    redis.kill('SIGCONT')
    await redis.stop()
  })
  return redis
}

async function outageGateway (t: Test, cache = ''): Promise<TestGateway> {
  const redis = await privateRedis(t)
  return await startGateway(t, { redis, yaml: cache })
}

function cacheYaml (staleIfErrorS: number): string {
  return `cache: { ttl_ms: 100, negative_ttl_ms: 100, max_entries: 1000, stale_if_error_s: ${staleIfErrorS} }\n`
}

async function timed (fn: () => Promise<RawResponse>): Promise<{ res: RawResponse, ms: number }> {
  const start = Date.now()
  const res = await fn()
  return { res, ms: Date.now() - start }
}

function assertUnavailableInTime (t: Test, res: RawResponse, ms: number, what: string): void {
  t.equal(res.status, 503, `${what}: 503 (fail closed, never 200 or 500)`)
  t.same(res.status === 503 ? JSON.parse(res.body) : res.body, UNAVAILABLE_BODY, `${what}: the catalogue body for 503`)
  t.ok(ms < UNAVAILABLE_WITHIN_MS, `${what}: answered in ${ms} ms (bound 1000 ms + margin)`)
}

const SIGNALS = [
  ['Redis killed (SIGKILL)', 'SIGKILL'],
  ['Redis hung (SIGSTOP)', 'SIGSTOP']
] as const

t.test('a key that is not cached gets 503 within 1 s while Redis is unreachable', { jobs: 2 }, async (t) => {
  for (const [label, signal] of SIGNALS) {
    t.test(label, { buffered: true }, async (t) => {
      const gw = await outageGateway(t)
      const used = await gw.fixtures.personalKey('alice')
      const fresh = await Promise.all(Array.from({ length: 8 }, async () => await gw.fixtures.personalKey('alice')))
      t.equal((await gw.get('/api/v1/users', used.key)).status, 200, 'control: Redis up, a key works')

      gw.redis.kill(signal)
      const start = Date.now()
      const at = [0, 700, 1500, 3000]
      for (let i = 0; i < at.length; i++) {
        await sleep(Math.max(0, (at[i] as number) - (Date.now() - start)))
        const key = fresh[i]?.key ?? ''
        const { res, ms } = await timed(async () => await gw.get('/api/v1/users', key))
        assertUnavailableInTime(t, res, ms, `a never-seen key ${at[i]} ms into the outage`)
      }

      // a burst of concurrent never-seen keys
      const burst = await Promise.all(fresh.slice(4).map(async (k) => await timed(async () => await gw.get('/api/v1/users', k.key))))
      for (const { res, ms } of burst) assertUnavailableInTime(t, res, ms, 'a never-seen key in a concurrent burst')
      t.equal(gw.upstream.requests.length, 1, 'nothing but the control request reached the upstream')
    })
  }
})

t.test('cached decisions are served inside stale_if_error_s, and not after it', { jobs: 4 }, async (t) => {
  for (const [label, signal] of SIGNALS) {
    t.test(`${label}, stale_if_error_s: 2`, { buffered: true }, async (t) => {
      const gw = await outageGateway(t, cacheYaml(2))
      const { key } = await gw.fixtures.personalKey('alice')
      const fresh = await gw.fixtures.personalKey('alice')

      t.equal((await gw.get('/api/v1/users', key)).status, 200, 'the key is used just before the outage')
      gw.redis.kill(signal)
      const outage = Date.now()

      // Inside the window (and past the 100 ms cache TTL): still served.
      for (const at of [200, 900, 1500]) {
        await sleep(Math.max(0, at - (Date.now() - outage)))
        const sentAt = Date.now() - outage
        const res = await gw.get('/api/v1/users', key)
        t.ok(sentAt < 1700, `(the request went out ${sentAt} ms into the outage, inside the 2 s window)`)
        t.equal(res.status, 200, `the cached key is served ${at} ms into the outage`)
      }
      const { res: freshRes, ms } = await timed(async () => await gw.get('/api/v1/users', fresh.key))
      assertUnavailableInTime(t, freshRes, ms, 'a never-seen key inside the window')

      // After the window. A hung server is only noticed by a timeout: allow the
      // promised 1 s for that before the 2 s window starts.
      const noticed = signal === 'SIGKILL' ? 0 : 1000
      for (const at of [2000 + noticed + 400, 2000 + noticed + 1500]) {
        await sleep(Math.max(0, at - (Date.now() - outage)))
        const { res, ms } = await timed(async () => await gw.get('/api/v1/users', key))
        assertUnavailableInTime(t, res, ms, `the cached key ${at} ms into the outage, past the window`)
      }
    })

    t.test(`${label}, stale_if_error_s: 0`, { buffered: true }, async (t) => {
      const gw = await outageGateway(t, cacheYaml(0))
      const { key } = await gw.fixtures.personalKey('alice')

      t.equal((await gw.get('/api/v1/users', key)).status, 200, 'the key is used just before the outage')
      gw.redis.kill(signal)
      await sleep(150) // past the 100 ms cache TTL
      for (const when of ['first request after the TTL', 'a later request']) {
        const { res, ms } = await timed(async () => await gw.get('/api/v1/users', key))
        assertUnavailableInTime(t, res, ms, `no stale window: ${when}`)
        await sleep(300)
      }
    })
  }
})

/** Polls /readyz until it answers `status`; the elapsed time, or -1. */
async function readyzTurns (gw: TestGateway, status: number, withinMs: number): Promise<number> {
  return await eventually(async () => (await gw.admin('GET', '/readyz')).status === status, withinMs, 50)
}

t.test('/readyz follows Redis, and the gateway recovers without a restart', { jobs: 2 }, async (t) => {
  t.test('Redis killed, then restarted', { buffered: true }, async (t) => {
    const gw = await outageGateway(t)
    t.equal((await gw.admin('GET', '/readyz')).status, 200, 'ready while Redis answers')

    gw.redis.kill('SIGKILL')
    const down = await readyzTurns(gw, 503, NOT_READY_WITHIN_MS)
    t.ok(down !== -1, `not ready within 5 s of losing Redis (took ${down} ms)`)

    await gw.redis.restart() // a fresh, empty server on the same port
    const up = await readyzTurns(gw, 200, READY_AGAIN_WITHIN_MS)
    t.ok(up !== -1, `ready again within 10 s of Redis coming back (took ${up} ms)`)

    // The restarted server is empty: seed it again, as an operator would restore it.
    await gw.fixtures.standardWorld()
    const { key } = await gw.fixtures.personalKey('alice')
    const res = await gw.get('/api/v1/users', key)
    t.equal(res.status, 200, 'a new key works after the recovery')
    t.equal(gw.upstream.last()?.headers['x-auth-user-id'], 'alice', 'and is forwarded with its identity')
  })

  t.test('Redis hung, then resumed', { buffered: true }, async (t) => {
    const gw = await outageGateway(t)
    const before = await gw.fixtures.personalKey('alice')
    t.equal((await gw.admin('GET', '/readyz')).status, 200, 'ready while Redis answers')

    gw.redis.kill('SIGSTOP')
    const down = await readyzTurns(gw, 503, NOT_READY_WITHIN_MS)
    t.ok(down !== -1, `not ready within 5 s of Redis hanging (took ${down} ms)`)
    const { res: during, ms } = await timed(async () => await gw.get('/api/v1/users', before.key))
    assertUnavailableInTime(t, during, ms, 'a never-seen key while Redis hangs')

    gw.redis.kill('SIGCONT')
    const up = await readyzTurns(gw, 200, READY_AGAIN_WITHIN_MS)
    t.ok(up !== -1, `ready again within 10 s of Redis resuming (took ${up} ms)`)

    t.equal((await gw.get('/api/v1/users', before.key)).status, 200, 'a key created before the outage works again')
    const after = await gw.fixtures.personalKey('alice')
    t.equal((await gw.get('/api/v1/users', after.key)).status, 200, 'a key created after the recovery works')
  })
})

t.test('a key revoked before the outage is never let through during it', { jobs: 4 }, async (t) => {
  const variants = [
    ['the gateway saw the revocation (a 401) before the outage', true],
    ['nobody used the key between the revocation and the outage', false]
  ] as const
  for (const [label, signal] of SIGNALS) {
    for (const [variant, observed] of variants) {
      t.test(`${label}; ${variant}`, { buffered: true }, async (t) => {
        const gw = await outageGateway(t, cacheYaml(2))
        const { key, id } = await gw.fixtures.personalKey('alice')
        t.equal((await gw.get('/api/v1/users', key)).status, 200, 'the key works, and is cached')

        // Revoke it as an admin would with redis-cli, then let more than the
        // cache TTL and the promised 1 s propagation pass.
        await gw.fixtures.hset(gw.fixtures.keys.key(id), 'status', 'revoked')
        await gw.fixtures.hset(gw.fixtures.keys.key(id), 'revoked_at', new Date().toISOString().replace(/\.\d+Z$/, 'Z'))
        await sleep(1200)
        if (observed) t.equal((await gw.get('/api/v1/users', key)).status, 401, 'revoked: 401 while Redis is up')

        gw.redis.kill(signal)
        const outage = Date.now()
        const statuses: number[] = []
        while (Date.now() - outage < 3500) {
          statuses.push((await gw.get('/api/v1/users', key)).status)
          await sleep(100)
        }
        t.ok(statuses.length >= 5, `requests were made throughout the outage (${statuses.length})`)
        t.same(statuses.filter((s) => s !== 401 && s !== 503), [],
          `every answer is 401 or 503, never 200 (got ${statuses.join(' ')})`)
      })
    }
  }
})
