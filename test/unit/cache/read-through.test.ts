// The read-through cache owns freshness (src/cache/read-through.ts): which entries may
// be served, one read for concurrent loads, the fill budget, install unless raced.
import t from 'tap'
import { NO_TRACKING, type Tracking } from '../../../src/cache/tracking.js'
import { ReadThroughCache, RegistryBusy, type Loader } from '../../../src/cache/read-through.js'
import { cacheName, RecordCache } from '../../../src/cache/record-cache.js'
import type { FillLimiter } from '../../../src/cache/fill-limiter.js'
import type { RedisHealth } from '../../../src/registry/redis-client.js'
import { parseRoleRecord } from '../../../src/registry/records.js'

const timings = { ttlMs: 500, negativeTtlMs: 200, staleIfErrorMs: 30_000, verifyEveryMs: 250, sweepEveryMs: 500 }
const role = parseRoleRecord({ permissions: 'users:read' })

function world (o: { tracking?: Tracking, fills?: FillLimiter, enabled?: boolean } = {}) {
  let now = 1_000_000
  const health = { up: true, lastOkAt: now }
  const records = new RecordCache(100)
  const cache = new ReadThroughCache({
    records,
    enabled: o.enabled ?? true,
    tracking: o.tracking ?? NO_TRACKING,
    fills: o.fills,
    health: health as unknown as RedisHealth,
    timings,
    now: () => now
  })
  return { cache, records, health, at: () => now, advance: (ms: number) => { now += ms } }
}

const fillRole: Loader<string> = async (install) => {
  install(cacheName.role('reader'), role)
  return 'read'
}

t.test('fresh for ttl_ms after the read, then it must be read again', async (t) => {
  const w = world()
  t.equal(w.cache.entry('role', 'reader', w.at()), undefined, 'nothing held: must load')
  t.equal(await w.cache.load('reader', fillRole), 'read')
  t.equal(w.cache.entry('role', 'reader', w.at())?.value, role, 'fresh')
  w.advance(timings.ttlMs)
  t.ok(w.cache.entry('role', 'reader', w.at()), 'still fresh at ttl_ms')
  w.advance(1)
  t.equal(w.cache.entry('role', 'reader', w.at()), undefined, 'past ttl_ms: must load')
})

t.test('Redis down: a stale entry is served inside the stale window, not past it', async (t) => {
  const w = world()
  await w.cache.load('reader', fillRole)
  w.health.lastOkAt = w.at()
  w.advance(timings.ttlMs + 1)
  w.health.up = false
  t.ok(w.cache.entry('role', 'reader', w.at()), 'stale but servable')
  w.advance(timings.staleIfErrorMs)
  t.equal(w.cache.entry('role', 'reader', w.at()), undefined, 'past the stale window')
})

t.test('an entry already past its TTL when Redis was last heard is never served stale', async (t) => {
  const w = world()
  await w.cache.load('reader', fillRole)
  w.advance(timings.ttlMs + 1)
  w.health.lastOkAt = w.at()
  w.health.up = false
  t.equal(w.cache.entry('role', 'reader', w.at()), undefined)
})

t.test('concurrent loads of one id share one read', async (t) => {
  const w = world()
  let reads = 0
  let release = (): void => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  const loader: Loader<number> = async () => { reads++; await gate; return reads }
  const a = w.cache.load('k', loader)
  const b = w.cache.load('k', loader)
  t.equal(a, b, 'the same promise')
  t.ok(w.cache.loading('k'))
  release()
  t.same(await Promise.all([a, b]), [1, 1])
  t.notOk(w.cache.loading('k'), 'done: the next load reads again')
  t.equal(w.cache.refill('k', loader) !== undefined, true)
})

t.test('the fill budget: a load waits for a token; none in time is RegistryBusy', async (t) => {
  const w = world({ fills: { take: async () => { throw new Error('no token in time') } } as unknown as FillLimiter })
  await t.rejects(w.cache.load('k', fillRole), RegistryBusy)
  t.notOk(w.cache.loading('k'), 'the refused load is not shared with the next one')
})

t.test('a record an invalidation raced is not installed; the read still answers', async (t) => {
  const raced: Tracking = { ...NO_TRACKING, mayInstall: () => false }
  const w = world({ tracking: raced })
  t.equal(await w.cache.load('reader', fillRole), 'read')
  t.equal(w.records.role('reader'), undefined, 'nothing installed')
})

t.test('cache disabled: nothing served, nothing installed', async (t) => {
  const w = world({ enabled: false })
  await w.cache.load('reader', fillRole)
  t.equal(w.records.role('reader'), undefined)
  t.equal(w.cache.entry('role', 'reader', w.at()), undefined)
})
