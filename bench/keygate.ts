// keygate as a server under test: one shared redis-server (on the load
// generator's CPU), seeded with a role, a user and the scenario keys, and one
// `keygate serve` child per scenario, pinned like the baseline.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { generateKey, type NewKey } from '../src/registry/key-material.js'
import { waitForRedis } from '../src/registry/redis-client.js'
import { redisKeys } from '../src/registry/redis-keys.js'
import { freePort } from './port.js'
import { spawnServer, type ChildServer } from './process.js'
import { BENCH_PATH } from './servers.js'
import type { RunningServer, ScenarioContext } from './types.js'

const PREFIX = 'keygate:bench:'

/** Keys known before any server starts, so scenarios can carry them in their headers. */
export const benchKeys = {
  personal: generateKey('kg_'),
  bot: generateKey('kg_'),
  /** well-formed, valid checksum, never stored */
  unknown: generateKey('kg_')
}

let redis: Promise<{ url: string, server: ChildServer }> | undefined
let users = 0

async function sharedRedis (ctx: ScenarioContext): Promise<{ url: string, server: ChildServer }> {
  redis ??= (async () => {
    const port = await freePort()
    const server = await spawnServer({
      name: 'redis',
      command: 'redis-server',
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      env: {},
      cpus: ctx.auxCpus,
      port,
      waitReady: async (signal) => { await waitForRedis(`redis://127.0.0.1:${port}`, { signal }) }
    })
    const url = `redis://127.0.0.1:${port}`
    await seed(url)
    return { url, server }
  })()
  return await redis
}

async function seed (url: string): Promise<void> {
  const client = new Redis(url)
  const k = redisKeys(PREFIX)
  const now = new Date().toISOString()
  const record = (key: NewKey, fields: Record<string, string>): Record<string, string> =>
    ({ hash: key.hash, org: 'acme', name: 'bench', status: 'active', created_at: now, created_by: 'bench', ...fields })
  await client.multi()
    .hset(k.role('reader'), { permissions: 'users:read' })
    .hset(k.user('bench-user'), { org: 'acme', role: 'reader', status: 'active' })
    .hset(k.key(benchKeys.personal.id), record(benchKeys.personal, { type: 'personal', user: 'bench-user' }))
    .hset(k.key(benchKeys.bot.id), record(benchKeys.bot, { type: 'bot', role: 'reader' }))
    .exec()
  client.disconnect()
}

export async function startKeygate (ctx: ScenarioContext, name: string, cache: { ttlMs: number }, logLevel = 'info'): Promise<RunningServer> {
  const { url, server: redisServer } = await sharedRedis(ctx)
  users++
  const dir = mkdtempSync(join(tmpdir(), 'keygate-bench-'))
  const config = join(dir, 'keygate.yaml')
  writeFileSync(config, `
redis: { prefix: "${PREFIX}" }
upstreams:
  core: { url: "${ctx.originUrl}" }
routes:
  - { prefix: /api/v1, upstream: core }
rules:
  - { method: GET, path: ${BENCH_PATH}, permissions: [users:read] }
cache: { ttl_ms: ${cache.ttlMs}, negative_ttl_ms: ${cache.ttlMs}, max_entries: 100000, stale_if_error_s: 30 }
log: { level: ${logLevel} }
`)
  const port = await freePort()
  const adminPort = await freePort()
  const gateway = await spawnServer({
    name,
    command: process.execPath,
    args: [join(ctx.distDir, 'src', 'cli', 'main.js'), 'serve'],
    env: {
      KEYGATE_CONFIG: config,
      KEYGATE_REDIS_URL: url,
      KEYGATE_LISTEN: `127.0.0.1:${port}`,
      KEYGATE_ADMIN_LISTEN: `127.0.0.1:${adminPort}`
    },
    cpus: ctx.serverCpus,
    port,
    readyUrl: `http://127.0.0.1:${adminPort}/readyz`,
    isReady: (status) => status === 200
  })
  return {
    port: gateway.port,
    pid: gateway.pid,
    async stop () {
      await gateway.stop()
      if (--users === 0) await redisServer.stop()
    }
  }
}
