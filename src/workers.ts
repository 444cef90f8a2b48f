/**
 * `keygate serve --workers N|auto`: N worker processes on the same ports
 * (node:cluster). Each worker is a whole gateway with its own cache and its own
 * push-invalidation connection, so each is kept current by Redis independently;
 * nothing is shared but the listening sockets. The primary only supervises: it
 * replaces a worker that dies (with a backoff, so a crash loop does not spin), and
 * on SIGINT/SIGTERM stops the workers gracefully and exits when they have; SIGHUP it
 * passes on to every worker. A worker
 * that cannot bind a listener is not replaced: no replacement could, so the primary
 * stops the others and exits 1, as a single process would, for its supervisor to see.
 */
import cluster, { type Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import type { Logger } from 'pino'
import { serveClusterMetrics } from './metrics/cluster-metrics.js'

/** a worker's exit status when a listener could not bind (EX_CONFIG, sysexits.h) */
export const WORKER_CANNOT_LISTEN = 78

export interface SuperviseOptions {
  workers: number
  logger: Logger
  /** how long a graceful stop may take before workers are killed */
  stopTimeoutMs?: number
}

/** `auto` is the number of cores; otherwise a positive integer. */
export function parseWorkers (value: string): number {
  if (value === 'auto') return availableParallelism()
  if (!/^[1-9][0-9]{0,3}$/.test(value)) throw new Error(`--workers must be a positive integer or "auto", got "${value}"`)
  return Number(value)
}

export function isWorker (): boolean {
  return cluster.isWorker
}

/** Runs in the primary: forks the workers and keeps N of them alive until a signal. */
export function supervise (o: SuperviseOptions): void {
  const { logger } = o
  let stopping = false
  /** recent deaths, for the restart backoff */
  let deaths: number[] = []

  const fork = (): void => {
    const worker = cluster.fork()
    worker.once('online', () => { logger.info({ worker_pid: worker.process.pid }, 'worker started') })
  }

  let exitCode = 0
  cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode)
      return
    }
    if (code === WORKER_CANNOT_LISTEN) {
      // the worker printed which setting; every other worker would fail the same way
      logger.error({ worker_pid: worker.process.pid }, 'a worker could not listen; stopping')
      exitCode = 1
      stop('SIGTERM')
      return
    }
    const now = Date.now()
    deaths = deaths.filter((t) => now - t < 30_000).concat(now)
    // at once for an occasional death; 250 ms doubling up to 5 s while workers keep dying
    const delayMs = deaths.length <= 1 ? 0 : Math.min(5_000, 250 * 2 ** (deaths.length - 2))
    logger.error({ worker_pid: worker.process.pid, code, signal, restart_in_ms: delayMs }, 'worker died; replacing it')
    setTimeout(fork, delayMs)
  })

  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'keygate shutting down workers')
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined)
    if (workers.length === 0) process.exit(exitCode)
    for (const w of workers) w.process.kill('SIGTERM')
    setTimeout(() => {
      for (const w of workers) w.process.kill('SIGKILL')
      process.exit(1)
    }, o.stopTimeoutMs ?? 12_000).unref()
  }
  process.once('SIGINT', () => { stop('SIGINT') })
  process.once('SIGTERM', () => { stop('SIGTERM') })
  // SIGHUP: each worker re-reads the upstreams' TLS files (server.ts)
  process.on('SIGHUP', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGHUP')
  })

  serveClusterMetrics()
  logger.info({ workers: o.workers }, 'keygate starting workers')
  for (let i = 0; i < o.workers; i++) fork()
}
