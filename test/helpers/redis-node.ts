/**
 * One redis-server process of a test's own, with whatever arguments a topology
 * needs (a replica, a sentinel, a cluster node, a debug-enabled server), on a free
 * 127.0.0.1 port, in a temporary directory, persistence off unless the arguments
 * say otherwise. The plain server most tests use (redis.ts), and each process of
 * redis-sentinel.ts and redis-cluster.ts.
 *
 * Ready means: the very process we spawned answers PING (checked by its pid, so a
 * foreign server that grabbed the port is never mistaken for ours). Every process
 * is killed when the test process exits, including on SIGINT/SIGTERM/SIGHUP/SIGALRM
 * (tap's timeout); nothing can clean up after SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { TestRedis } from './redis.js'
import { freePort } from './net.js'

export interface RedisNode {
  host: '127.0.0.1'
  port: number
  /** redis://127.0.0.1:<port> */
  url: string
  /** the process's directory (its RDB, AOF, nodes.conf or sentinel.conf) */
  dir: string
  /** pid of the live process; undefined once it has exited */
  readonly pid: number | undefined
  /** signal the process; a no-op once it has exited */
  kill: (signal: NodeJS.Signals) => void
  /** SIGKILL and wait for the exit (and remove the directory, when it was made for this node) */
  stop: () => Promise<void>
  /** stop, then start again on the same port with the same arguments */
  restart: () => Promise<void>
  /** the tail of its stdout and stderr */
  output: () => string
}

export interface NodeOptions {
  /** the arguments after `redis-server`, given the port (may write a config file first) */
  argv?: (port: number, dir: string) => string[] | Promise<string[]>
  /** defaults to a new temporary directory, removed by stop() */
  dir?: string
}

const START_TIMEOUT_MS = 10_000

/** `redis-server --port P --bind 127.0.0.1 --save '' --appendonly no --dir D`, plus `extra`. */
export function serverArgs (extra: string[] = []): (port: number, dir: string) => string[] {
  return (port, dir) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra]
}

export function tempDir (what: string): string {
  return mkdtempSync(join(tmpdir(), `keygate-${what}-`))
}

export async function startRedisNode (opts: NodeOptions = {}): Promise<RedisNode> {
  const dir = opts.dir ?? tempDir('redis')
  const argv = opts.argv ?? serverArgs()
  // freePort() races with other processes: retry a bind failure on a new port
  let last = ''
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    const started = await startOn(port, await argv(port, dir), dir)
    if (started.ok) return node(port, dir, argv, started.proc, opts.dir === undefined)
    last = started.reason
    if (!started.bindFailed) break
  }
  throw new Error(`could not start redis-server: ${last}`)
}

/**
 * A node as test/helpers/gateway.ts takes it (`startGateway(t, { redis })`). Stopping
 * it stays the caller's unless a `stop` is given.
 */
export function asTestRedis (n: RedisNode, stop: () => Promise<void> = async () => {}): TestRedis {
  return {
    url: n.url,
    port: n.port,
    external: false,
    get pid () { return n.pid },
    kill: (signal) => { n.kill(signal) },
    stop,
    restart: async () => { await n.restart() }
  }
}

// ---------------------------------------------------------------------------

interface Proc {
  child: ChildProcess
  exited: Promise<void>
  output: () => string
  spawnError: () => Error | undefined
}

type Started = { ok: true, proc: Proc } | { ok: false, bindFailed: boolean, reason: string }

function node (port: number, dir: string, argv: NonNullable<NodeOptions['argv']>, first: Proc, ownDir: boolean): RedisNode {
  let current: Proc | undefined = first
  const kill = async (): Promise<void> => {
    const proc = current
    current = undefined
    if (proc === undefined) return
    if (alive(proc.child)) {
      proc.child.ref()
      proc.child.kill('SIGKILL')
    }
    await proc.exited
  }
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    get pid () { return current !== undefined && alive(current.child) ? current.child.pid : undefined },
    kill (signal) { if (current !== undefined && alive(current.child)) current.child.kill(signal) },
    async stop () {
      await kill()
      if (ownDir) rmSync(dir, { recursive: true, force: true })
    },
    async restart () {
      await kill()
      const deadline = Date.now() + 5000
      for (;;) {
        const started = await startOn(port, await argv(port, dir), dir)
        if (started.ok) {
          current = started.proc
          return
        }
        if (!started.bindFailed || Date.now() > deadline) throw new Error(`could not restart redis-server on ${port}: ${started.reason}`)
        await sleep(100)
      }
    },
    output: () => current?.output() ?? ''
  }
}

async function startOn (port: number, args: string[], dir: string): Promise<Started> {
  const proc = spawnProc(args, dir)
  const deadline = Date.now() + START_TIMEOUT_MS
  while (Date.now() < deadline) {
    const error = proc.spawnError()
    if (error !== undefined) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('redis-server was not found on PATH; install it with `apt-get install -y redis-server` (.ci/run does), or set REDIS_URL to use an existing Redis')
      throw error
    }
    if (!alive(proc.child)) {
      await Promise.race([proc.exited, sleep(500)])
      const out = proc.output()
      return { ok: false, bindFailed: /address already in use|could not create server tcp listening socket/i.test(out), reason: out.trim() }
    }
    if (await answers(port, proc.child.pid)) return { ok: true, proc }
    await sleep(50)
  }
  proc.child.kill('SIGKILL')
  proc.child.ref()
  await proc.exited
  return { ok: false, bindFailed: false, reason: `no PING answer on ${port} within ${START_TIMEOUT_MS} ms: ${proc.output().trim()}` }
}

function spawnProc (args: string[], dir: string): Proc {
  const child = spawn('redis-server', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let error: Error | undefined
  const append = (chunk: Buffer): void => { out = (out + chunk.toString('utf8')).slice(-8192) }
  child.stdout?.on('data', append)
  child.stderr?.on('data', append)
  const exited = new Promise<void>((resolve) => {
    const done = (): void => {
      live.delete(child)
      if (live.size === 0) uninstallSignalHooks()
      resolve()
    }
    child.once('exit', done)
    child.on('error', (err) => { error = err; done() })
  })
  live.add(child)
  installHooks()
  // a process a test forgot must not keep the test alive; the exit hook kills it
  child.unref()
  for (const stream of [child.stdout, child.stderr]) if (stream instanceof Socket) stream.unref()
  return { child, exited, output: () => out, spawnError: () => error }
}

/** PING (and INFO server, for the pid) on a raw socket: +PONG from the process with this pid. */
async function answers (port: number, pid: number | undefined): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    let buf = ''
    const done = (ok: boolean): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), 1000)
    socket.on('error', () => done(false))
    socket.on('close', () => done(false))
    socket.on('connect', () => socket.write('PING\r\nINFO server\r\n'))
    socket.on('data', (chunk: Buffer) => {
      buf += chunk.toString('latin1')
      if (!'+PONG'.startsWith(buf.slice(0, 5))) return done(false)
      if (buf.includes(`process_id:${String(pid)}\r\n`)) done(true)
    })
  })
}

function alive (child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null
}

// ---- cleanup when the test process goes away ------------------------------

const live = new Set<ChildProcess>()
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGALRM']
let exitHook = false
let signalHooks = false

function killAll (): void {
  for (const child of live) {
    try { child.kill('SIGKILL') } catch { /* gone */ }
  }
  live.clear()
}

function onSignal (signal: NodeJS.Signals): void {
  killAll()
  uninstallSignalHooks()
  process.kill(process.pid, signal) // the default action (or tap's own handler) still runs
}

function installHooks (): void {
  if (!exitHook) {
    process.on('exit', killAll)
    exitHook = true
  }
  if (!signalHooks) {
    for (const s of SIGNALS) process.on(s, onSignal)
    signalHooks = true
  }
}

function uninstallSignalHooks (): void {
  if (!signalHooks) return
  for (const s of SIGNALS) process.removeListener(s, onSignal)
  signalHooks = false
}
