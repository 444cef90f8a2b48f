// Spawn a server as a child process (optionally pinned with taskset), wait for
// it to answer HTTP, and stop it. Every child is tracked so the runner can stop
// everything at the end, on SIGINT, or kill it synchronously on exit.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { waitForHttp } from './ready.js'
import type { RunningServer } from './types.js'
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface SpawnServerOptions {
  /** Label used in logs and error messages. */
  name: string
  command: string
  args?: readonly string[]
  /** Added on top of the runner's environment. */
  env?: Record<string, string>
  /** Run under `taskset -c <cpus>` when defined. */
  cpus?: string | undefined
  /** Port the child was told to listen on. */
  port: number
  /** Polled until it answers; the child is ready then. */
  readyUrl?: string
  /** Instead of readyUrl: resolves once the child is ready (for non-HTTP servers such as redis-server). */
  waitReady?: (signal: AbortSignal) => Promise<void>
  /** Default: any HTTP response counts as ready. */
  isReady?: (status: number) => boolean
  /** Default 60 s (ready.ts). */
  readyTimeoutMs?: number
}

/** How a node server is launched: directly, or under a tool (bench/instructions.ts runs them under valgrind). */
export interface Launcher {
  /** the command line before `node` */
  prefix: readonly string[]
  /** options of `node` itself, before the script (V8's flags, which NODE_OPTIONS does not take) */
  nodeArgs?: readonly string[]
  readyTimeoutMs: number
}

/** node's own options from an environment variable: space-separated, e.g. `--trace-gc --no-concurrent-recompilation` */
export function nodeArgsFrom (name: string): string[] {
  return (process.env[name] ?? '').split(' ').filter((a) => a !== '')
}

/**
 * A launcher prefix under which node's stdout (a gateway's log lines, and --trace-gc's) goes into `file`: sh runs
 * `node <args> <script>...`, node being its $1.
 */
export function stdoutInto (file: string): string[] {
  return ['sh', '-c', `node="$1"; shift; exec "$node" "$@" > '${file.replaceAll("'", '')}'`, 'sh']
}

/** `command` and `args` for running `node <args>`, under the launcher's prefix when there is one. */
export function nodeCommand (
  args: readonly string[], launcher: Launcher | undefined
): Pick<SpawnServerOptions, 'command' | 'args' | 'readyTimeoutMs'> {
  if (launcher === undefined) return { command: process.execPath, args }
  const [command, ...rest] = launcher.prefix
  if (command === undefined) throw new Error('launcher: empty prefix')
  return {
    command,
    args: [...rest, process.execPath, ...(launcher.nodeArgs ?? []), ...args],
    readyTimeoutMs: launcher.readyTimeoutMs
  }
}

export interface ChildServer extends RunningServer {
  name: string
  pid: number
  /** Last lines the child wrote to stdout/stderr. */
  output: () => string
}

const TAIL_LINES = 40
const STOP_GRACE_MS = 5_000

interface Tracked { name: string, kill: (signal: NodeJS.Signals) => void, stop: () => Promise<void> }
const live = new Set<Tracked>()
const unexpected: string[] = []

export async function spawnServer (options: SpawnServerOptions): Promise<ChildServer> {
  const args = options.args ?? []
  const [command, argv] = options.cpus === undefined
    ? [options.command, [...args]]
    : ['taskset', ['-c', options.cpus, options.command, ...args]]

  // stdout (keygate's request log: one line per request) goes to a file, not to this
  // process: reading it here would spend the load generator's CPU on the server's log,
  // a cost that lands on the side of the measurement it does not belong to. stderr is
  // rare and stays piped.
  const stdoutFile = join(logDir(), `${options.name}-${process.hrtime.bigint()}.log`)
  const stdoutFd = openSync(stdoutFile, 'w')
  const child = spawn(command, argv, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', stdoutFd, 'pipe']
  })
  closeSync(stdoutFd)

  const tail: string[] = []
  const collect = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue
      tail.push(line)
      if (tail.length > TAIL_LINES) tail.shift()
    }
  }
  child.stderr?.on('data', collect)
  const output = (): string => [lastBytes(stdoutFile, 4096), ...tail].join('\n')

  let stopping = false
  const aborter = new AbortController()
  let markExited = (): void => {}
  const exited = new Promise<void>((resolve) => { markExited = resolve })

  const kill = (signal: NodeJS.Signals): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  }
  const stop = async (): Promise<void> => {
    stopping = true
    kill('SIGTERM')
    const graceful = await Promise.race([exited.then(() => true), delay(STOP_GRACE_MS, false)])
    if (!graceful) {
      kill('SIGKILL')
      await exited
    }
  }
  const tracked: Tracked = { name: options.name, kill, stop }
  live.add(tracked)

  const finish = (why: string): void => {
    if (aborter.signal.aborted) return
    live.delete(tracked)
    aborter.abort(new Error(why))
    if (!stopping) {
      unexpected.push(why)
      process.stderr.write(`\n!!! ${why} unexpectedly. Last output:\n${output()}\n`)
    }
    markExited()
  }
  child.once('exit', (code, signal) => {
    finish(`${options.name} (pid ${child.pid ?? '?'}) exited with ${signal ?? `code ${code ?? '?'}`}`)
  })
  child.once('error', (err) => {
    // Spawn failures (e.g. ENOENT) emit 'error' and possibly no 'exit'.
    if (child.pid === undefined) finish(`${options.name} could not be spawned: ${err.message}`)
  })
  const spawned = once(child, 'spawn')

  try {
    await spawned
    if (options.waitReady !== undefined) {
      await options.waitReady(aborter.signal)
    } else {
      await waitForHttp(options.readyUrl ?? `http://127.0.0.1:${options.port}/`, {
        signal: aborter.signal,
        ...(options.isReady !== undefined && { isReady: options.isReady }),
        ...(options.readyTimeoutMs !== undefined && { timeoutMs: options.readyTimeoutMs })
      })
    }
  } catch (err: unknown) {
    await stop()
    const reason = err instanceof Error ? err.message : String(err)
    throw new Error(`${options.name} failed to start: ${reason}\nLast output:\n${output()}`)
  }

  const pid = child.pid
  if (pid === undefined) throw new Error(`${options.name}: no pid after spawn`)
  return { name: options.name, pid, port: options.port, stop, output }
}

/** Stop every child still running (graceful, then SIGKILL). */
export async function stopAll (): Promise<void> {
  await Promise.all([...live].map(async (child) => await child.stop()))
}

/** Last resort from a synchronous 'exit' handler. */
export function killAllSync (): void {
  for (const child of live) child.kill('SIGKILL')
}

/** Children that died without being asked to. */
export function unexpectedExits (): readonly string[] {
  return unexpected
}

let dir: string | undefined
/** One directory per run for the children's stdout, removed when the run ends. */
function logDir (): string {
  if (dir === undefined) {
    const created = mkdtempSync(join(tmpdir(), 'keygate-bench-out-'))
    process.once('exit', () => { rmSync(created, { recursive: true, force: true }) })
    dir = created
  }
  return dir
}

/** The end of a file, for error messages. */
function lastBytes (file: string, n: number): string {
  try {
    const size = statSync(file).size
    const length = Math.min(n, size)
    const buf = Buffer.alloc(length)
    const fd = openSync(file, 'r')
    try {
      readSync(fd, buf, 0, length, size - length)
    } finally {
      closeSync(fd)
    }
    return buf.toString('utf8')
  } catch {
    return ''
  }
}
