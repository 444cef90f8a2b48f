/**
 * The race push invalidation must survive: a cache fill reads a record, the record
 * changes, the invalidation arrives, and only then does the fill's reply arrive.
 * The fill must not install the older record. Real Redis, real tracking connection;
 * only the moment the read's reply is handed back is held, so the order is certain.
 *
 * And the channel's loss: a write made while the tracking connection is gone gets
 * no invalidation message, so the cache must not keep serving what it held.
 */
import t, { type Test } from 'tap'
import { Redis, type RedisOptions } from 'ioredis'
import pino from 'pino'
import { InvalidationTracker, type EstablishedListener } from '../../../src/cache/invalidation.js'
import type { FillTicket, Tracking } from '../../../src/cache/tracking.js'
import { ReadThroughCache } from '../../../src/cache/read-through.js'
import { cacheName, cacheNaming, RecordCache } from '../../../src/cache/record-cache.js'
import { IdentityResolver, type Resolved } from '../../../src/cache/resolve-identity.js'
import { parseKey } from '../../../src/registry/key-format.js'
import { RedisHealth } from '../../../src/registry/redis-client.js'
import { RegistryReader, type Chain } from '../../../src/registry/registry-reader.js'
import type { KeyRecord } from '../../../src/registry/records.js'
import { Fixtures } from '../../helpers/fixtures.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { until } from '../../helpers/wait.js'

const OWN_CONNECTION = { connectionName: 'keygate-invalidation', autoResubscribe: false, maxRetriesPerRequest: 0, retryStrategy: () => null }

/**
 * A tracker of `fixtures`' records on a connection of its own to `url` (with `connection`'s options), started, once
 * its channel is up; `onEstablished` hears every establishment from the first.
 */
async function startTracker (
  t: Test, url: string, fixtures: Fixtures, cache: RecordCache,
  o: { connection?: RedisOptions, onEstablished?: EstablishedListener } = {}
): Promise<InvalidationTracker> {
  const tracker = new InvalidationTracker({
    connect: async () => new Redis(url, { ...OWN_CONNECTION, ...o.connection }),
    ...cacheNaming(fixtures.keys),
    cache,
    verifyEveryMs: 50,
    logger: pino({ level: 'silent' })
  })
  if (o.onEstablished !== undefined) tracker.onEstablished(o.onEstablished)
  tracker.start()
  t.teardown(() => tracker.stop())
  await until(() => tracker.up, 3000, 'tracking', 5)
  return tracker
}

/** A real Redis and registry, a real tracker, and a reader whose replies can be held back. */
async function world (t: Test, tracking?: (real: InvalidationTracker) => Tracking) {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const client = new Redis(redis.url)
  const gatewayConn = new Redis(redis.url)
  for (const c of [client, gatewayConn]) c.on('error', () => {})
  t.teardown(() => { client.disconnect(); gatewayConn.disconnect() })
  const fixtures = new Fixtures(client, prefix)
  await fixtures.standardWorld()
  const { key, id } = await fixtures.personalKey('alice')

  const cache = new RecordCache(100)
  const tracker = await startTracker(t, redis.url, fixtures, cache)

  const real = new RegistryReader(gatewayConn, fixtures.keys, prefix)
  const reader = {
    /** set to hold the next reply back until the promise resolves */
    hold: undefined as Promise<void> | undefined,
    reads: 0,
    async fetchChain (keyId: string): Promise<Chain> {
      const reply = await real.fetchChain(keyId)
      this.reads++
      const hold = this.hold
      this.hold = undefined
      if (hold !== undefined) await hold
      return reply
    }
  }
  const health = new RedisHealth(gatewayConn)
  health.start(50)
  t.teardown(() => { health.stop() })
  await until(() => health.up, 3000, 'health', 5)
  const resolver = new IdentityResolver({
    reader: reader as unknown as RegistryReader,
    cache: new ReadThroughCache({
      records: cache,
      enabled: true,
      tracking: tracking?.(tracker) ?? tracker,
      health,
      timings: { ttlMs: 60_000, negativeTtlMs: 60_000, staleIfErrorMs: 0, verifyEveryMs: 50, sweepEveryMs: 100 }
    }),
    health
  })
  const keyId = (parseKey(key, 'kg_') as { id: string }).id
  t.equal(keyId, id)
  return { client, fixtures, cache, tracker, reader, resolver, keyId, recordName: fixtures.keys.key(id) }
}

function statusOf (r: Resolved): string {
  return (r.key as KeyRecord).status
}

/** Runs the race: returns what the racing fill answered and what is served afterwards. */
async function race (w: Awaited<ReturnType<typeof world>>): Promise<{ raced: string, after: string, afterFromCache: boolean }> {
  let release = (): void => {}
  w.reader.hold = new Promise<void>((resolve) => { release = resolve })
  const readsBefore = w.reader.reads
  const pending = w.resolver.resolve(w.keyId) as Promise<Resolved>
  await until(() => w.reader.reads > readsBefore, 3000, 'the fill has read the record', 5)
  const seen = w.cache.counters.invalidations
  await w.client.hset(w.recordName, 'status', 'revoked')
  await until(() => w.cache.counters.invalidations > seen, 3000, 'the invalidation', 5)
  release()
  const raced = statusOf(await pending)
  const next = w.resolver.resolve(w.keyId)
  const afterFromCache = !(next instanceof Promise)
  return { raced, after: statusOf(await next), afterFromCache }
}

t.test('an invalidation that overtakes a fill: the older record is never installed', async (t) => {
  const w = await world(t)
  const { raced, after, afterFromCache } = await race(w)
  t.equal(raced, 'active', 'the racing request is answered with what Redis held when it read')
  t.equal(after, 'revoked', 'the next request sees the revocation')
  t.notOk(afterFromCache, '(the raced record was not installed: the next request read Redis)')
})

t.test('control: without the fill ticket check, the same race caches the older record', async (t) => {
  // Proves the test above can fail: a tracker that ignores tickets serves the stale record.
  const w = await world(t, (real) => ({
    get up () { return real.up },
    get verifiedAt () { return real.verifiedAt },
    get since () { return real.since },
    beginFill: (): FillTicket => ({ ...real.beginFill(), epoch: 0 }),
    mayInstall: () => true,
    endFill: (ticket) => { real.endFill(ticket) },
    onChange: (listener) => { real.onChange(listener) }
  }))
  const { after, afterFromCache } = await race(w)
  t.equal(after, 'active', 'the stale record was installed and served')
  t.ok(afterFromCache, 'from the cache')
})

t.test('a write made while the tracking connection is down is not missed', async (t) => {
  const w = await world(t)
  t.equal(statusOf(await w.resolver.resolve(w.keyId)), 'active', 'cached')
  t.notOk(w.resolver.resolve(w.keyId) instanceof Promise, 'served from the cache')

  // Kill the tracking connection, and write before it can come back.
  const list = await w.client.client('LIST') as string
  const line = list.split('\n').find((l) => l.includes('name=keygate-invalidation'))
  t.ok(line, 'the tracking connection is visible to Redis')
  const clientId = /id=(\d+)/.exec(line ?? '')?.[1] as string
  await w.client.client('KILL', 'ID', clientId)
  await w.client.hset(w.recordName, 'status', 'revoked')
  await until(() => !w.tracker.up, 3000, 'the loss to be noticed', 5)

  t.equal(statusOf(await w.resolver.resolve(w.keyId)), 'revoked', 'while tracking is down, entries are unverified: Redis is read')
  await until(() => w.tracker.up, 3000, 'tracking to come back', 5)
  t.equal(w.cache.size, 0, 'the cache was flushed when tracking came back')
  t.equal(statusOf(await w.resolver.resolve(w.keyId)), 'revoked', 'and the revocation stays seen')
  await w.client.hset(w.recordName, 'status', 'active')
  await until(() => {
    const r = w.resolver.resolve(w.keyId)
    return !(r instanceof Promise) && statusOf(r) === 'active'
  }, 3000, 'the re-established channel delivers', 5)
  t.pass('invalidations flow again after re-establishment')
})

/** Holds the whole server for `ms` (a script runs alone): every command waits behind it. */
async function busyServer (c: Redis, ms: number): Promise<void> {
  const spin = 'local s=redis.call("TIME") local e=s[1]*1e6+s[2]+ARGV[1]*1000 ' +
    'repeat local n=redis.call("TIME") until n[1]*1e6+n[2]>=e return 1'
  await c.eval(spin, 0, String(ms))
}

t.test('a late ping keeps the channel; a server silent for three pings in a row loses it', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const other = new Redis(redis.url)
  t.teardown(() => { other.disconnect() })
  const fixtures = new Fixtures(other, uniquePrefix())
  let established = 0
  const tracker = await startTracker(t, redis.url, fixtures, new RecordCache(100), {
    connection: { commandTimeout: 100 },
    onEstablished: () => { established++ }
  })

  // one ping answered late (the server busy for 150 ms, the ping's timeout 100 ms)
  let wentDown = false
  const watch = setInterval(() => { if (!tracker.up) wentDown = true }, 2)
  t.teardown(() => { clearInterval(watch) })
  const before = tracker.verifiedAt
  await busyServer(other, 150)
  await until(() => tracker.verifiedAt > before + 150, 3000, 'a ping answered after the busy spell', 5)
  t.notOk(wentDown, 'the channel stayed up through one late ping')
  t.equal(established, 1, 'and was not re-established (the cache was not flushed)')

  // silent for a second: three pings in a row time out, the connection is given up
  await busyServer(other, 1000)
  await until(() => established === 2, 5000, 'tracking to be re-established', 5)
  t.ok(wentDown, 'the channel went down while the server was silent')
  t.ok(tracker.up, 'and is up again on a new connection')
})

t.test('under fills that always overlap, only the invalidations a fill in flight can be refused by are kept', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const writer = new Redis(redis.url)
  t.teardown(() => { writer.disconnect() })
  const fixtures = new Fixtures(writer, uniquePrefix())
  const cache = new RecordCache(100)
  const tracker = await startTracker(t, redis.url, fixtures, cache)
  const invalidate = async (id: string): Promise<void> => {
    const seen = cache.counters.invalidations
    await writer.hset(fixtures.keys.key(id), 'status', 'active')
    await until(() => cache.counters.invalidations > seen, 3000, `the invalidation of ${id}`, 5)
  }

  // a relay of fills, each begun before the one before it ends: some fill is always in flight
  let inFlight = tracker.beginFill()
  let most = 0
  for (let i = 0; i < 20; i++) {
    await invalidate(`k${i}`)
    t.notOk(tracker.mayInstall(inFlight, cacheName.key(`k${i}`)), `a fill begun before k${i} changed may not install it`)
    const next = tracker.beginFill()
    t.ok(tracker.mayInstall(next, cacheName.key(`k${i}`)), 'a fill begun after may')
    tracker.endFill(inFlight)
    inFlight = next
    most = Math.max(most, tracker.remembered)
  }
  t.equal(most, 0, 'no name outlives the fills it could refuse (it was one per change while any fill was in flight)')
  tracker.endFill(inFlight)

  // a fill that stays in flight keeps what it may be refused by, whatever ends meanwhile
  const long = tracker.beginFill()
  for (let i = 0; i < 5; i++) {
    const short = tracker.beginFill()
    await invalidate(`m${i}`)
    tracker.endFill(short)
  }
  t.equal(tracker.remembered, 5, 'the five changes the long fill may not install are kept')
  for (let i = 0; i < 5; i++) t.notOk(tracker.mayInstall(long, cacheName.key(`m${i}`)), `m${i} refused to the long fill`)
  // the same name changed twice: one entry, at its latest change
  const later = tracker.beginFill()
  await invalidate('m0')
  t.equal(tracker.remembered, 5, 'a name changed again is one entry')
  tracker.endFill(long)
  t.equal(tracker.remembered, 1, 'the long fill ended: only the change after the later fill began is kept')
  t.notOk(tracker.mayInstall(later, cacheName.key('m0')), 'and it still refuses the later fill')
  tracker.endFill(later)
  t.equal(tracker.remembered, 0, 'no fill in flight: nothing kept')
})
