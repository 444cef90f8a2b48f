// Measurements beside the throughput table, each with its own Redis and gateways:
//   propagation  three `keygate serve` processes; a raw Redis client flips a key's
//                status, a user's status and a role's permissions 50 times each;
//                time from the write's acknowledgement until each instance serves
//                the new decision. Target: p99 <= 100 ms.
//   memory       one gateway with 100,000 personal keys cached (1,000 users, 10
//                roles); peak RSS of the process. Target: <= 150 MiB.
import { Redis } from 'ioredis'
import { Pool } from 'undici'
import { generateKey, type NewKey } from '../src/registry/key-material.js'
import { redisKeys } from '../src/registry/redis-keys.js'
import { keyRecord, PREFIX, registryReadsOf, startBenchRedis, startKeygate, type KeygateServer } from './keygate.js'
import { peakRssKiB } from './procfs.js'
import { BENCH_PATH } from './servers.js'
import { percentile } from './stats.js'
import type { ScenarioContext } from './types.js'

export interface ExtraResult {
  markdown: string
  failures: string[]
}

const CHANGES = 50
const PROPAGATION_TARGET_MS = 100
const RSS_TARGET_MIB = 150
const KEYS = 100_000

export async function propagation (ctx: ScenarioContext): Promise<ExtraResult> {
  const redis = await startBenchRedis(ctx, 'redis-extra')
  const client = new Redis(redis.url)
  const k = redisKeys(PREFIX)
  const personal = generateKey('kg_')
  const bot = generateKey('kg_')
  await client.multi()
    .hset(k.role('reader'), { permissions: 'users:read' })
    .hset(k.role('flip'), { permissions: 'users:read' })
    .hset(k.user('u1'), { org: 'acme', role: 'reader', status: 'active' })
    .hset(k.user('u2'), { org: 'acme', role: 'reader', status: 'active' })
    .hset(k.key(personal.id), keyRecord(personal, { type: 'personal', user: 'u1' }))
    .exec()
  const userKey = generateKey('kg_')
  await client.hset(k.key(userKey.id), keyRecord(userKey, { type: 'personal', user: 'u2' }))
  await client.hset(k.key(bot.id), keyRecord(bot, { type: 'bot', role: 'flip' }))

  const gateways: KeygateServer[] = []
  const pools: Pool[] = []
  try {
    for (let i = 0; i < 3; i++) {
      const gw = await startKeygate(ctx, `keygate-propagation-${i}`, { redisUrl: redis.url, unpinned: true, logLevel: 'warn' })
      gateways.push(gw)
      pools.push(new Pool(`http://127.0.0.1:${gw.port}`, { connections: 2 }))
    }
    const status = async (pool: Pool, key: string): Promise<number> => {
      const res = await pool.request({ method: 'GET', path: BENCH_PATH, headers: { authorization: `Bearer ${key}` } })
      await res.body.dump()
      return res.statusCode
    }
    const cases = [
      { what: "key's status", key: personal.key, redisKey: k.key(personal.id), field: 'status', values: ['revoked', 'active'], statuses: [401, 200] },
      { what: "user's status", key: userKey.key, redisKey: k.user('u2'), field: 'status', values: ['deactivated', 'active'], statuses: [401, 200] },
      { what: "role's permissions", key: bot.key, redisKey: k.role('flip'), field: 'permissions', values: ['orgs:read', 'users:read'], statuses: [403, 200] }
    ]
    const rows: string[] = []
    const failures: string[] = []
    const all: number[] = []
    for (const c of cases) {
      for (const pool of pools) await status(pool, c.key) // warm every cache
      const delays: number[] = []
      let lost = 0
      for (let i = 0; i < CHANGES; i++) {
        await client.hset(c.redisKey, c.field, c.values[i % 2] as string)
        const since = performance.now()
        const expected = c.statuses[i % 2] as number
        const arrivals = await Promise.all(pools.map(async (pool) => {
          while (performance.now() - since < 5000) {
            if (await status(pool, c.key) === expected) return performance.now() - since
          }
          return -1
        }))
        for (const ms of arrivals) { if (ms < 0) lost++; else delays.push(ms) }
      }
      delays.sort((a, b) => a - b)
      all.push(...delays)
      if (lost > 0) failures.push(`propagation: ${lost} changes of a ${c.what} never reached an instance`)
      rows.push(`| a ${c.what} | ${delays.length} | ${percentile(delays, 50).toFixed(1)} | ${percentile(delays, 99).toFixed(1)} | ${(delays.at(-1) ?? Number.NaN).toFixed(1)} |`)
    }
    all.sort((a, b) => a - b)
    const p99 = percentile(all, 99)
    if (!(p99 <= PROPAGATION_TARGET_MS)) failures.push(`propagation: p99 ${p99.toFixed(1)} ms is above the ${PROPAGATION_TARGET_MS} ms target`)
    rows.push(`| **all** | ${all.length} | ${percentile(all, 50).toFixed(1)} | **${p99.toFixed(1)}** | ${(all.at(-1) ?? Number.NaN).toFixed(1)} |`)
    return {
      markdown: [
        `### Change propagation: 3 instances, ${CHANGES} changes of each kind, written with a raw Redis client`,
        '',
        '| change | arrivals | p50 ms | p99 ms | max ms |',
        '|---|---:|---:|---:|---:|',
        ...rows,
        '',
        `Time from the write's acknowledgement to the first response with the new decision on each instance (keep-alive polling). Target p99 <= ${PROPAGATION_TARGET_MS} ms: ${p99 <= PROPAGATION_TARGET_MS ? 'met' : 'NOT met'}.`,
        ''
      ].join('\n'),
      failures
    }
  } finally {
    await Promise.all(pools.map(async (p) => await p.close()))
    await Promise.all(gateways.map(async (g) => await g.stop()))
    client.disconnect()
    await redis.server.stop()
  }
}

export async function memory (ctx: ScenarioContext): Promise<ExtraResult> {
  const redis = await startBenchRedis(ctx, 'redis-extra')
  const client = new Redis(redis.url)
  const k = redisKeys(PREFIX)
  const keys: NewKey[] = []
  let batch = client.pipeline()
  for (let r = 0; r < 10; r++) batch.hset(k.role(`role${r}`), { permissions: 'users:read orgs:read' })
  for (let u = 0; u < 1000; u++) batch.hset(k.user(`user${u}`), { org: 'acme', role: `role${u % 10}`, status: 'active' })
  for (let i = 0; i < KEYS; i++) {
    const key = generateKey('kg_')
    keys.push(key)
    batch.hset(k.key(key.id), keyRecord(key, { type: 'personal', user: `user${i % 1000}` }))
    if (batch.length >= 5000) { await batch.exec(); batch = client.pipeline() }
  }
  await batch.exec()

  let gw: KeygateServer | undefined
  let pool: Pool | undefined
  try {
    gw = await startKeygate(ctx, 'keygate-memory', { redisUrl: redis.url, logLevel: 'warn', cache: `{ max_entries: ${KEYS + 2000} }` })
    const before = peakRssKiB(gw.pid as number)
    pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 32 })
    let next = 0
    let bad = 0
    const worker = async (): Promise<void> => {
      while (next < keys.length) {
        const key = keys[next++] as NewKey
        const res = await (pool as Pool).request({ method: 'GET', path: BENCH_PATH, headers: { authorization: `Bearer ${key.key}` } })
        await res.body.dump()
        if (res.statusCode !== 200) bad++
      }
    }
    await Promise.all(Array.from({ length: 32 }, worker))
    // a second pass: every key must now come from the cache
    const readsBefore = await registryReadsOf(client)
    next = 0
    await Promise.all(Array.from({ length: 32 }, worker))
    const secondPassReads = await registryReadsOf(client) - readsBefore
    const peak = peakRssKiB(gw.pid as number)
    const scrape = await (await fetch(`http://127.0.0.1:${gw.adminPort}/metrics`)).text()
    const gauge = (name: string): string => {
      const v = Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)`, 'm').exec(scrape)?.[1])
      return Number.isFinite(v) ? (v / 1048576).toFixed(1) : 'n/a'
    }
    const entries = /^keygate_cache_entries ([0-9]+)/m.exec(scrape)?.[1] ?? 'n/a'
    const spaces = [...scrape.matchAll(/^nodejs_heap_space_size_total_bytes\{space="([a-z_]+)"\} ([0-9.e+]+)/gm)]
      .map((m) => `${m[1] ?? ''} ${(Number(m[2]) / 1048576).toFixed(1)}`).join(', ')
    const now = `${gauge('process_resident_memory_bytes')} MiB RSS now, V8 heap used ${gauge('nodejs_heap_size_used_bytes')} of ${gauge('nodejs_heap_size_total_bytes')} MiB, external ${gauge('nodejs_external_memory_bytes')} MiB, ${entries} cache entries; heap spaces (MiB): ${spaces}`
    const peakMiB = (peak ?? Number.NaN) / 1024
    const failures: string[] = []
    if (bad > 0) failures.push(`memory: ${bad} requests were not 200`)
    if (!(peakMiB <= RSS_TARGET_MIB)) failures.push(`memory: peak RSS ${peakMiB.toFixed(1)} MiB with ${KEYS} cached keys is above the ${RSS_TARGET_MIB} MiB target`)
    return {
      markdown: [
        `### Memory: ${KEYS.toLocaleString('en')} personal keys cached (1,000 users, 10 roles)`,
        '',
        '| peak RSS before (MiB) | peak RSS after (MiB) | Redis reads in a second pass over every key |',
        '|---:|---:|---:|',
        `| ${((before ?? Number.NaN) / 1024).toFixed(1)} | **${peakMiB.toFixed(1)}** | ${secondPassReads} |`,
        '',
        `VmHWM of the gateway process after every key was used twice. Target <= ${RSS_TARGET_MIB} MiB: ${peakMiB <= RSS_TARGET_MIB ? 'met' : 'NOT met'}. At the end: ${now}.`,
        ''
      ].join('\n'),
      failures
    }
  } finally {
    await pool?.close()
    await gw?.stop()
    client.disconnect()
    await redis.server.stop()
  }
}
