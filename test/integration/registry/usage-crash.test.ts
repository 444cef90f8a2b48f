/**
 * What a stop costs the usage counts, with the real `keygate serve` process:
 * - SIGTERM: the final write holds every count (exactly the requests answered);
 * - SIGKILL: the counts of the last interval at most are lost; every request answered
 *   more than one interval (and a write's round trip) before the kill is counted.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { BIN } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { standardWorld, type World } from '../../helpers/world.js'
import { readUsage } from '../../../src/usage/reader.js'

const FLUSH_MS = 500

async function serving (t: Test, w: World): Promise<{ port: number, kill: (signal: NodeJS.Signals) => Promise<number | null> }> {
  const port = await freePort()
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-usage-')), 'keygate.yaml')
  writeFileSync(file, JSON.stringify({
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${await freePort()}`,
    redis: { prefix: w.prefix },
    upstreams: { core: { url: w.upstream.url } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }],
    usage: { flush_ms: FLUSH_MS },
    log: { level: 'silent' }
  }))
  const child = spawn(process.execPath, [BIN, 'serve'], { env: { PATH: process.env.PATH, KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: w.redis.url }, stdio: 'ignore' })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  for (let i = 0; i < 400; i++) {
    const res = await send(port, 'GET', '/api/v1/users', {}).catch(() => undefined)
    if (res !== undefined) break
    await sleep(50)
  }
  return { port, kill: async (signal) => { child.kill(signal); return await exited } }
}

async function counted (w: World, keyId: string, since: number): Promise<number> {
  const points = await readUsage(w.client, w.fixtures.keys, { key: keyId }, { from: since - 60_000, to: Date.now() + 60_000, step: '1m' })
  return points.reduce((n, p) => n + p.allowed, 0)
}

t.test('SIGTERM: the final write holds every count', async (t) => {
  const w = await standardWorld(t)
  const alice = await w.fixtures.personalKey('alice')
  const gw = await serving(t, w)
  const start = Date.now()
  let answered = 0
  for (let i = 0; i < 50; i++) if ((await send(gw.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status === 200) answered++
  t.equal(answered, 50)
  t.equal(await gw.kill('SIGTERM'), 0, 'a clean exit')
  t.equal(await counted(w, alice.id, start), 50, 'every request counted')
})

t.test('SIGKILL: at most the last interval is lost', async (t) => {
  const w = await standardWorld(t)
  const alice = await w.fixtures.personalKey('alice')
  const gw = await serving(t, w)
  const start = Date.now()
  const answeredAt: number[] = []
  while (Date.now() - start < 3 * FLUSH_MS + 200) {
    if ((await send(gw.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status === 200) answeredAt.push(Date.now())
  }
  const killedAt = Date.now()
  await gw.kill('SIGKILL')
  const n = await counted(w, alice.id, start)
  // (a write's round trip to a local Redis: well under 250 ms, even on a loaded machine)
  const surelyWritten = answeredAt.filter((at) => at < killedAt - FLUSH_MS - 250).length
  t.comment(`answered ${answeredAt.length}, counted ${n}, answered more than one interval before the kill ${surelyWritten}`)
  t.ok(surelyWritten > 0, 'requests were answered more than one interval before the kill')
  t.ok(n >= surelyWritten, 'every request answered more than one interval before the kill is counted')
  t.ok(n <= answeredAt.length, 'nothing counted twice')
})
