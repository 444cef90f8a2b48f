/**
 * Redis for tests.
 *
 * startRedis() uses $REDIS_URL when it is set (shared, "external" server: it
 * cannot be stopped, signalled or restarted). Otherwise it spawns a private
 * `redis-server` from PATH on a free 127.0.0.1 port, with persistence off and
 * no config file, and waits until that very process answers PING. A private
 * server can be signalled (SIGSTOP/SIGCONT/SIGKILL) and restarted on the same
 * port, which is what the Redis-outage tests need.
 *
 * Spawned servers are killed when the test process exits, including when it
 * is ended by SIGINT/SIGTERM/SIGHUP/SIGALRM (tap's timeout signal). Nothing
 * can clean up after SIGKILL.
 *
 * uniquePrefix() gives each test its own key namespace, so tests sharing one
 * external Redis do not collide.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from './net.js'

export interface TestRedis {
  /** redis://host:port URL for ioredis */
  url: string
  port: number
  /** Kill the private server and wait for it to exit. No-op when external. */
  stop(): Promise<void>
  /** Send a signal to the private server; no-op if it is dead (throws when external). */
  kill(signal: NodeJS.Signals): void
  /** pid of the current private server process; undefined when external. */
  pid?: number
  /** Start a fresh server on the same port, killing the old one first if needed (throws when external). */
  restart(): Promise<void>
  external: boolean
}

const START_TIMEOUT_MS = 10_000
const RESTART_BIND_RETRY_MS = 5_000
const INSTALL_HINT = 'redis-server was not found on PATH; install it with `apt-get install -y redis-server` ' +
  '(or set REDIS_URL to use an existing Redis)'

interface RedisProcess {
  child: ChildProcess
  /** Resolves once the process has exited (or failed to spawn). */
  exited: Promise<void>
  /** Spawn error (e.g. ENOENT), if any. */
  spawnError(): Error | undefined
  /** Resolves once the process has exited and its stdout/stderr are drained. */
  drained: Promise<void>
  /** Tail of the server's stdout+stderr, for error messages. */
  output(): string
}

// ---------------------------------------------------------------------------
// Cleanup of spawned servers when the test process goes away.

const live = new Set<ChildProcess>()
const CLEANUP_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGALRM']
let exitHookInstalled = false
let signalHooksInstalled = false

function killAllSync (): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL')
    } catch {
      // already gone
    }
  }
  live.clear()
}

function onCleanupSignal (signal: NodeJS.Signals): void {
  killAllSync()
  uninstallSignalHooks()
  // Re-raise so the default action (or another handler such as tap's
  // signal-exit, which only acts when it is the last listener) still runs.
  process.kill(process.pid, signal)
}

function installHooks (): void {
  if (!exitHookInstalled) {
    process.on('exit', killAllSync)
    exitHookInstalled = true
  }
  if (!signalHooksInstalled) {
    for (const sig of CLEANUP_SIGNALS) process.on(sig, onCleanupSignal)
    signalHooksInstalled = true
  }
}

function uninstallSignalHooks (): void {
  if (!signalHooksInstalled) return
  for (const sig of CLEANUP_SIGNALS) process.removeListener(sig, onCleanupSignal)
  signalHooksInstalled = false
}

function isAlive (child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null
}

// ---------------------------------------------------------------------------
// Spawning and readiness.

function spawnRedisProcess (port: number): RedisProcess {
  const args = ['--save', '', '--appendonly', 'no', '--port', String(port), '--bind', '127.0.0.1']
  const child = spawn('redis-server', args, {
    cwd: tmpdir(), // never drop a dump.rdb into the repository
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  let error: Error | undefined
  const append = (chunk: Buffer): void => {
    out = (out + chunk.toString('utf8')).slice(-4096)
  }
  child.stdout?.on('data', append)
  child.stderr?.on('data', append)
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child)
      if (live.size === 0) uninstallSignalHooks()
      resolve()
    })
    child.on('error', (err: Error) => {
      error = err
      live.delete(child)
      if (live.size === 0) uninstallSignalHooks()
      resolve()
    })
  })
  const drained = new Promise<void>((resolve) => {
    child.once('close', () => resolve())
    child.on('error', () => resolve())
  })
  live.add(child)
  installHooks()
  // A server a test forgot to stop must not keep the test process alive; the
  // exit hook kills it. stop()/restart() re-ref while waiting for the exit.
  child.unref()
  for (const stream of [child.stdout, child.stderr]) {
    if (stream instanceof Socket) stream.unref()
  }
  return { child, exited, drained, spawnError: () => error, output: () => out }
}

/**
 * One readiness probe: connect, send PING and INFO, and check that the reply
 * is +PONG from the process with the expected pid (so a foreign server that
 * happens to hold the port is never mistaken for ours).
 */
async function probe (port: number, pid: number | undefined, timeoutMs = 1000): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    let buf = ''
    const done = (ok: boolean): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.on('error', () => done(false))
    socket.on('close', () => done(false))
    socket.on('connect', () => socket.write('PING\r\nINFO server\r\n'))
    socket.on('data', (chunk: Buffer) => {
      buf += chunk.toString('latin1')
      if (!'+PONG'.startsWith(buf.slice(0, 5))) {
        done(false) // e.g. -LOADING or -ERR
        return
      }
      if (pid === undefined ? buf.includes('process_id:') : buf.includes(`process_id:${pid}\r\n`)) {
        done(true)
      }
    })
  })
}

type StartResult = { ok: true, proc: RedisProcess } | { ok: false, bindFailed: boolean, reason: string }

async function startOn (port: number): Promise<StartResult> {
  const proc = spawnRedisProcess(port)
  const deadline = Date.now() + START_TIMEOUT_MS
  while (Date.now() < deadline) {
    const spawnError = proc.spawnError()
    if (spawnError !== undefined) {
      if ((spawnError as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(INSTALL_HINT)
      throw new Error(`could not spawn redis-server: ${spawnError.message}`)
    }
    if (!isAlive(proc.child)) {
      // Output can still be in flight after 'exit'; it explains the failure.
      await Promise.race([proc.drained, sleep(1000)])
      const out = proc.output()
      return {
        ok: false,
        bindFailed: /address already in use|could not create server tcp listening socket/i.test(out),
        reason: `redis-server exited (code ${String(proc.child.exitCode)}, signal ${String(proc.child.signalCode)}): ${out.trim()}`
      }
    }
    if (await probe(port, proc.child.pid)) return { ok: true, proc }
    await sleep(50)
  }
  proc.child.kill('SIGKILL')
  proc.child.ref()
  await proc.exited
  return { ok: false, bindFailed: false, reason: `redis-server on port ${port} did not answer PING within ${START_TIMEOUT_MS} ms: ${proc.output().trim()}` }
}

async function stopProcess (proc: RedisProcess | undefined): Promise<void> {
  if (proc === undefined) return
  if (isAlive(proc.child)) {
    proc.child.ref() // keep the event loop alive until the exit is observed
    proc.child.kill('SIGKILL') // works even on a SIGSTOPped process
  }
  await proc.exited
}

// ---------------------------------------------------------------------------
// Public API.

export function uniquePrefix (): string {
  return `kgtest:${randomBytes(6).toString('hex')}:`
}

export async function startRedis (): Promise<TestRedis> {
  const external = process.env.REDIS_URL
  if (external !== undefined && external !== '') return externalRedis(external)

  // freePort() is racy (another process may take the port before
  // redis-server binds it), so retry a few times with a new port.
  let lastReason = ''
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    const result = await startOn(port)
    if (result.ok) return privateRedis(port, result.proc)
    lastReason = result.reason
    if (!result.bindFailed) break
  }
  throw new Error(`could not start redis-server: ${lastReason}`)
}

function externalRedis (url: string): TestRedis {
  const parsed = new URL(url)
  const port = parsed.port === '' ? 6379 : Number(parsed.port)
  const refuse = (what: string): Error =>
    new Error(`${what} needs a private redis-server, but REDIS_URL is set (${url}); run this test without REDIS_URL`)
  return {
    url,
    port,
    external: true,
    pid: undefined,
    stop: async () => {},
    kill: () => { throw refuse('kill()') },
    restart: async () => { throw refuse('restart()') }
  }
}

function privateRedis (port: number, first: RedisProcess): TestRedis {
  let current: RedisProcess | undefined = first
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    external: false,
    get pid (): number | undefined {
      return current !== undefined && isAlive(current.child) ? current.child.pid : undefined
    },
    kill (signal: NodeJS.Signals): void {
      // No-op when the server is already dead, so teardowns may send SIGCONT blindly.
      if (current !== undefined && isAlive(current.child)) current.child.kill(signal)
    },
    async stop (): Promise<void> {
      const proc = current
      current = undefined
      await stopProcess(proc)
    },
    async restart (): Promise<void> {
      const old = current
      current = undefined
      await stopProcess(old)
      // The port is normally free at once after the old server died, but
      // retry the bind for a few seconds in case the kernel is slow to let go.
      const deadline = Date.now() + RESTART_BIND_RETRY_MS
      for (;;) {
        const result = await startOn(port)
        if (result.ok) {
          current = result.proc
          return
        }
        if (!result.bindFailed || Date.now() >= deadline) {
          throw new Error(`could not restart redis-server on port ${port}: ${result.reason}`)
        }
        await sleep(100)
      }
    }
  }
}
