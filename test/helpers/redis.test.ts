// Proves test/helpers/redis.ts: start, PING, SIGSTOP/SIGCONT, stop, restart
// on the same port, and cleanup of forgotten servers when the process ends.
import t from 'tap'
import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { Redis } from 'ioredis'
import { freePort } from './net.js'
import { startRedis, uniquePrefix } from './redis.js'
import type { TestRedis } from './redis.js'
import { TS_LOADER_ARGS } from './ts-loader.js'

const privateOnly = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
  ? 'needs a private redis-server (REDIS_URL is set)'
  : false

function client (t: Test, redis: TestRedis): Redis {
  const c = new Redis(redis.url, { commandTimeout: 500, maxRetriesPerRequest: 1, lazyConnect: true })
  c.on('error', () => {}) // expected while the server is stopped or dead
  t.teardown(() => c.disconnect())
  return c
}

/** Connects once to 127.0.0.1:port; resolves 'connected' or the error code. */
async function tcpState (port: number): Promise<string> {
  return await new Promise<string>((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    socket.on('connect', () => { socket.destroy(); resolve('connected') })
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
}

/** Waits until nothing accepts connections on port any more; resolves the connect error code. */
async function waitDown (port: number): Promise<string> {
  return await eventually(async () => {
    const state = await tcpState(port)
    if (state === 'connected') throw new Error(`port ${port} still accepts connections`)
    // a connection accepted just before the process died is reset: not down yet
    if (state === 'ECONNRESET') throw new Error(`port ${port} is going down`)
    return state
  })
}

/** Retries fn until it resolves, for at most timeoutMs. */
async function eventually<T> (fn: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await fn()
    } catch (err: unknown) {
      if (Date.now() > deadline) throw err
      await sleep(100)
    }
  }
}

t.test('freePort and uniquePrefix', async (t) => {
  const port = await freePort()
  t.ok(port > 0 && port < 65536)
  const a = uniquePrefix()
  const b = uniquePrefix()
  t.match(a, /^kgtest:[0-9a-f]+:$/)
  t.not(a, b)
})

t.test('starts and answers PING', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  t.equal(redis.url.endsWith(`:${redis.port}`), true)
  const c = client(t, redis)
  t.equal(await c.ping(), 'PONG')
  const key = uniquePrefix() + 'k'
  await c.set(key, 'v')
  t.equal(await c.get(key), 'v')
  await c.del(key)
})

t.test('SIGSTOP makes commands time out, SIGCONT restores, stop() ends it', { skip: privateOnly }, async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  t.equal(redis.external, false)
  t.type(redis.pid, 'number')
  const c = client(t, redis)
  t.equal(await c.ping(), 'PONG')

  redis.kill('SIGSTOP')
  await t.rejects(c.get('x'), /timed out/i)
  redis.kill('SIGCONT')
  t.equal(await eventually(() => c.ping()), 'PONG')

  await redis.stop()
  t.equal(redis.pid, undefined)
  t.equal(await tcpState(redis.port), 'ECONNREFUSED')
  await redis.stop() // idempotent
  redis.kill('SIGCONT') // no-op once dead
})

t.test('restart() after SIGKILL brings a fresh server back on the same port', { skip: privateOnly }, async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const c = client(t, redis)
  const key = uniquePrefix() + 'k'
  await c.set(key, 'before')
  const oldPid = redis.pid

  redis.kill('SIGKILL')
  t.equal(await waitDown(redis.port), 'ECONNREFUSED')

  await redis.restart()
  t.not(redis.pid, oldPid)
  t.equal(await tcpState(redis.port), 'connected')
  // The old client reconnects on its own; no persistence, so the key is gone.
  t.equal(await eventually(() => c.get(key)), null)
  const fresh = client(t, redis)
  t.equal(await fresh.ping(), 'PONG')

  // restart() also works while the server is alive (and even stopped).
  redis.kill('SIGSTOP')
  await redis.restart()
  t.equal(await eventually(() => fresh.ping()), 'PONG')
})

t.test('external REDIS_URL refuses kill/restart', async (t) => {
  const saved = process.env.REDIS_URL
  t.teardown(() => {
    if (saved === undefined) delete process.env.REDIS_URL
    else process.env.REDIS_URL = saved
  })
  process.env.REDIS_URL = 'redis://127.0.0.1:6390/2'
  const redis = await startRedis()
  t.equal(redis.external, true)
  t.equal(redis.port, 6390)
  t.equal(redis.pid, undefined)
  t.throws(() => redis.kill('SIGSTOP'), /private redis-server/)
  await t.rejects(redis.restart(), /private redis-server/)
  await redis.stop()
})

t.test('a missing redis-server binary gives an install hint', { skip: privateOnly }, async (t) => {
  const saved = process.env.PATH
  t.teardown(() => { process.env.PATH = saved })
  process.env.PATH = t.testdir({})
  await t.rejects(startRedis(), /apt-get install -y redis-server/)
})

t.test('forgotten servers die with the test process', { skip: privateOnly }, async (t) => {
  const dir = t.testdir({})
  const script = join(dir, 'child.mts')
  const helper = pathToFileURL(join(import.meta.dirname, 'redis.js')).href
  writeFileSync(script, [
    `import { startRedis } from ${JSON.stringify(helper)}`,
    'const redis = await startRedis()',
    'process.stdout.write(String(redis.port) + "\\n")',
    // "exit": let the event loop drain (the server must not keep it alive);
    // otherwise wait to be killed by a signal.
    'if (process.argv[2] !== "exit") setInterval(() => {}, 1000)'
  ].join('\n'))
  const loader = TS_LOADER_ARGS
  t.same(loader, ['--import=tsx'], 'the child loads TypeScript as this process does')
  const env = { ...process.env }
  delete env.NODE_OPTIONS

  for (const how of ['exit', 'SIGTERM', 'SIGINT', 'SIGALRM'] as const) {
    const child = spawn(process.execPath, [...loader, script, how], { env, stdio: ['ignore', 'pipe', 'inherit'] })
    const exited = once(child, 'exit')
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    const port = await eventually(async () => {
      const line = out.split('\n')[0] ?? ''
      if (!out.includes('\n')) throw new Error('no port yet')
      return Number(line)
    }, 30_000)
    t.ok(port > 0, `${how}: server started`) // with 'exit' it may already be gone
    if (how !== 'exit') {
      t.equal(await tcpState(port), 'connected', `${how}: server up`)
      child.kill(how)
    }
    const [code, signal] = await exited
    if (how === 'exit') t.equal(code, 0, 'exited normally')
    else t.equal(signal, how, `${how}: child still died from the signal`)
    t.equal(await waitDown(port), 'ECONNREFUSED', `${how}: server gone`)
  }
})
