/**
 * Sentinel and Cluster registries that cannot be reached fail closed, like a
 * standalone one (docs/security.md): the gateway starts, answers 503 for a key
 * it has not cached (never 500), and /readyz is not ready; the CLI's client (which
 * queues while it connects) fails instead of hanging. Cases:
 *   - sentinels at addresses where nothing listens
 *   - a live sentinel that does not know the master name
 *   - cluster seed nodes where nothing listens
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { buildApp } from '../../../src/app.js'
import { parseConfig } from '../../../src/config/load.js'
import { createLogger } from '../../../src/logger.js'
import { generateKey } from '../../../src/registry/key-format.js'
import { createRedis } from '../../../src/registry/redis-client.js'
import { eventually } from '../../helpers/gateway.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { startRedisNode } from '../../helpers/redis-node.js'

function config (url: string) {
  return parseConfig(`
listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
redis: { prefix: "{kgtest}:", command_timeout_ms: 300, connect_timeout_ms: 300 }
upstreams: { core: { url: "http://127.0.0.1:9" } }
routes: [{ prefix: /api/v1, upstream: core }]
rules: [{ method: GET, path: /api/v1/users, permissions: [] }]
`, { KEYGATE_REDIS_URL: url }, 'test')
}

async function closedPorts (n: number): Promise<string> {
  const ports = await Promise.all(Array.from({ length: n }, async () => await freePort()))
  return ports.map((p) => `127.0.0.1:${p}`).join(',')
}

async function assertFailsClosed (t: Test, url: string): Promise<void> {
  const cfg = config(url)
  const app = await buildApp(cfg, { logger: createLogger('silent') })
  t.teardown(() => app.close())
  await app.data.listen({ host: '127.0.0.1', port: 0 })
  await app.admin.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.data.server.address() as { port: number }).port
  const adminPort = (app.admin.server.address() as { port: number }).port

  const seen = new Set<number>()
  for (let i = 0; i < 3; i++) {
    const res = await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${generateKey(cfg.keys.prefix).key}` })
    seen.add(res.status)
    await new Promise((resolve) => setTimeout(resolve, 300))
  }
  t.same([...seen], [503], 'a never-seen key gets 503, every time (never 500)')
  t.equal((await send(adminPort, 'GET', '/readyz')).status, 503, '/readyz is not ready')
  t.notOk(app.health.up, 'Redis is marked down')

  // the CLI's client: queues while connecting, then gives up rather than hang
  const cli = createRedis(cfg.redis, { queueWhileConnecting: true })
  cli.on('error', () => {})
  t.teardown(() => { cli.disconnect() })
  let settled = false
  const outcome = cli.exists(`${cfg.redis.prefix}keys`).then(() => 'answered', (err: unknown) => (err as Error).message).finally(() => { settled = true })
  t.not(await eventually(async () => settled, 20_000, 100), -1, 'a CLI command fails instead of hanging')
  t.not(await outcome, 'answered', `(it failed: ${await outcome})`)
}

t.test('sentinels where nothing listens', async (t) => {
  await assertFailsClosed(t, `redis+sentinel://${await closedPorts(3)}/kgmaster`)
})

t.test('a live sentinel that does not know the master', async (t) => {
  const sentinel = await startRedisNode({
    argv: (port, dir) => {
      const conf = join(dir, `sentinel-${port}.conf`)
      writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\n`)
      return [conf, '--sentinel']
    }
  })
  t.teardown(async () => { await sentinel.stop() })
  await assertFailsClosed(t, `redis+sentinel://127.0.0.1:${sentinel.port}/nosuchmaster`)
})

t.test('cluster seed nodes where nothing listens', async (t) => {
  await assertFailsClosed(t, `redis+cluster://${await closedPorts(3)}`)
})
