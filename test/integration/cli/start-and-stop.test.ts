/**
 * Start and stop through the real `keygate serve` process:
 * - a request sent the moment the data port accepts gets its decision (200 for a good
 *   key), never a 503 because the process's own Redis connection is still being set
 *   up: 20 starts, each polled from before the process exists;
 * - a listener that cannot bind (address in use, invalid address) stops the process
 *   at once with exit 1 and a message naming the setting, for each listener;
 * - SIGTERM lets the request in flight finish, then the process exits 0; a request in
 *   flight past `shutdown_grace_ms` does not hold the exit back for longer.
 */
import t from 'tap'
import { standardWorld } from '../../helpers/world.js'
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { BIN } from '../../helpers/cli.js'
import { Fixtures } from '../../helpers/fixtures.js'
import { freePort } from '../../helpers/net.js'
import { send, type RawResponse } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { startUpstream } from '../../helpers/upstream.js'
import { until } from '../../helpers/wait.js'

const PATH = process.env.PATH

function configFile (config: Record<string, unknown>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-start-')), 'keygate.yaml')
  writeFileSync(file, JSON.stringify(config))
  return file
}

interface Serving { child: ChildProcess, stderr: () => string, exited: Promise<number | null> }

function serve (file: string, env: Record<string, string> = {}, args: string[] = []): Serving {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: { PATH, KEYGATE_CONFIG: file, ...env } })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => { stderr += d.toString() })
  child.stdout?.resume()
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, stderr: () => stderr, exited }
}

t.test('a request sent the moment the data port accepts gets its decision, not a 503', async (t) => {
  const { redis, upstream, prefix, fixtures } = await standardWorld(t)
  const alice = await fixtures.personalKey('alice')

  // 20 starts, four at a time (a loaded machine only widens the window being tested)
  const STARTS = 20
  const AT_ONCE = 4
  const oneStart = async (i: number): Promise<number> => {
    const port = await freePort()
    const adminPort = await freePort()
    const file = configFile({
      listen: `127.0.0.1:${port}`,
      admin_listen: `127.0.0.1:${adminPort}`,
      redis: { prefix },
      upstreams: { core: { url: upstream.url } },
      routes: [{ prefix: '/api/v1', upstream: 'core' }],
      rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }],
      log: { level: 'silent' }
    })
    const s = serve(file, { KEYGATE_REDIS_URL: redis.url })
    // fire at once: the first connection the listener accepts carries the request
    let res: RawResponse | undefined
    const deadline = Date.now() + 40_000
    while (res === undefined && Date.now() < deadline && s.child.exitCode === null) {
      res = await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` }).catch(() => undefined)
      if (res === undefined) await sleep(2)
    }
    if (res?.status !== 200) t.comment(`start ${i}: ${res?.status ?? `no answer (exit ${String(s.child.exitCode)})`} ${res?.body ?? ''} ${s.stderr()}`)
    s.child.kill('SIGTERM')
    t.equal(await s.exited, 0, `start ${i} stops cleanly`)
    return res?.status ?? -1
  }
  const statuses: number[] = []
  for (let i = 0; i < STARTS; i += AT_ONCE) {
    statuses.push(...await Promise.all(Array.from({ length: AT_ONCE }, async (_, j) => await oneStart(i + j))))
  }
  t.same(statuses.filter((s) => s !== 200), [], `all ${STARTS} first requests answered 200`)
})

t.test('a listener that cannot bind stops serve with exit 1, naming the setting', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const taken: Server = createServer()
  await new Promise<void>((resolve) => taken.listen({ host: '127.0.0.1', port: 0 }, resolve))
  t.teardown(() => { taken.close() })
  const busy = `127.0.0.1:${(taken.address() as { port: number }).port}`
  const free = async (): Promise<string> => `127.0.0.1:${await freePort()}`
  const base = {
    upstreams: { core: { url: 'http://127.0.0.1:1' } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    log: { level: 'silent' }
  }
  const cases: Array<[string, Record<string, unknown>, RegExp, string[]?]> = [
    ['listen in use', { listen: busy, admin_listen: await free() }, /listen: cannot listen on 127\.0\.0\.1:\d+: .*address already in use/i],
    ['admin_listen in use', { listen: await free(), admin_listen: busy }, /admin_listen: cannot listen on 127\.0\.0\.1:\d+: .*address already in use/i],
    ['authz_listen in use', { listen: await free(), admin_listen: await free(), authz_listen: busy }, /authz_listen: cannot listen on 127\.0\.0\.1:\d+: .*address already in use/i],
    ['authz_grpc_listen in use', { listen: await free(), admin_listen: await free(), authz_grpc_listen: busy }, /authz_grpc_listen: cannot listen on 127\.0\.0\.1:\d+: .*address already in use/i],
    ['listen on an address not on this machine', { listen: '192.0.2.1:8080', admin_listen: await free() }, /listen: cannot listen on 192\.0\.2\.1:8080: .*address not available/i],
    // every worker would fail the same way: the primary stops them all instead of replacing them
    ['listen in use, two workers', { listen: busy, admin_listen: await free() }, /listen: cannot listen on 127\.0\.0\.1:\d+: .*address already in use/i, ['--workers', '2']]
  ]
  await Promise.all(cases.map(async ([what, config, expected, args]) => {
    const s = serve(configFile({ ...base, ...config }), { KEYGATE_REDIS_URL: redis.url }, args)
    // (a guard against a hang, not a timing assertion: the cases start at once, several processes each)
    const timer = setTimeout(() => s.child.kill('SIGKILL'), 60_000)
    const code = await s.exited
    clearTimeout(timer)
    t.equal(code, 1, `${what}: exit 1 (${s.stderr()})`)
    t.match(s.stderr(), expected, `${what}: the message names the setting`)
  }))
})

t.test('SIGTERM lets the request in flight finish, then exits 0; shutdown_grace_ms bounds the wait', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const upstream = await startUpstream({ mode: { kind: 'slow', delayMs: 1500 } })
  t.teardown(() => upstream.close())
  const prefix = uniquePrefix()
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const fixtures = new Fixtures(client, prefix)
  await fixtures.standardWorld()
  const alice = await fixtures.personalKey('alice')

  const start = async (extra: Record<string, unknown>): Promise<Serving & { port: number }> => {
    const port = await freePort()
    const adminPort = await freePort()
    const s = serve(configFile({
      listen: `127.0.0.1:${port}`,
      admin_listen: `127.0.0.1:${adminPort}`,
      redis: { prefix },
      upstreams: { core: { url: upstream.url, timeout_ms: 60_000 } },
      routes: [{ prefix: '/api/v1', upstream: 'core' }],
      rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }],
      log: { level: 'silent' },
      ...extra
    }), { KEYGATE_REDIS_URL: redis.url })
    t.teardown(() => { if (s.child.exitCode === null) s.child.kill('SIGKILL') })
    await until(async () => (await send(adminPort, 'GET', '/readyz').catch(() => undefined))?.status === 200, 15_000, `serve ready (${s.stderr()})`, 25)
    return { ...s, port }
  }

  t.test('the request in flight finishes', async (t) => {
    const s = await start({})
    const before = upstream.requests.length
    const inFlight = send(s.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` }, undefined, { timeoutMs: 10_000 })
    await until(() => upstream.requests.length > before, 5000, 'the request reached the upstream', 10)
    s.child.kill('SIGTERM')
    await sleep(200)
    const refused = await send(s.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` }).catch((err: NodeJS.ErrnoException) => err.code)
    t.equal(refused, 'ECONNREFUSED', 'no new connection is accepted once draining')
    t.equal((await inFlight).status, 200, 'the request in flight got its answer')
    t.equal(await s.exited, 0, 'exit 0 after the drain')
  })

  t.test('a request in flight longer than shutdown_grace_ms does not hold the exit', async (t) => {
    upstream.setMode({ kind: 'slow', delayMs: 20_000 })
    t.teardown(() => { upstream.setMode({ kind: 'slow', delayMs: 1500 }) })
    const s = await start({ shutdown_grace_ms: 1000 })
    const before = upstream.requests.length
    const inFlight = send(s.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` }, undefined, { timeoutMs: 30_000 }).catch(() => undefined)
    await until(() => upstream.requests.length > before, 5000, 'the request reached the upstream', 10)
    const signalled = Date.now()
    s.child.kill('SIGTERM')
    const code = await s.exited
    const took = Date.now() - signalled
    await inFlight
    t.equal(code, 1, 'exit 1: the grace ran out with a request still in flight')
    t.ok(took < 8000, `stopped after the grace (${took} ms), not after the request's 20 s`)
  })
})
