/**
 * The process entry for `keygate serve`: build the planes, wait for the registry,
 * listen, and close gracefully on SIGINT/SIGTERM (in-flight requests finish within
 * `shutdown_grace_ms`); on SIGHUP, re-read the upstreams' TLS files (`ca_file`,
 * `client_cert_file`, `client_key_file`) named by the configuration loaded at start.
 * The only file that exits the process.
 */
import type { FastifyInstance } from 'fastify'
import { buildApp, type KeygateApp } from './app.js'
import { splitHostPort } from './config/addresses.js'
import type { Config } from './config/schema.js'
import { createLogger, flushLogger } from './logger.js'
import { boundHeapGrowth } from './heap-growth.js'
import { isWorker, supervise, WORKER_CANNOT_LISTEN } from './workers.js'

export { splitHostPort }

/**
 * How long the start waits for Redis to answer before listening anyway. Listening
 * only once the registry connection answers means that the first request gets its
 * decision rather than a 503 while the connection is still being set up; holding
 * early requests instead would delay them past the 1 s a registry outage is answered
 * within. With Redis unreachable the gateway listens after this wait, answers 503 and
 * reports not ready until Redis answers (a restart is never needed).
 */
export const START_WAIT_MS = 5000

/** A listener that could not bind, named by its setting (`listen`, `admin_listen`, `authz_listen`, `ops_listen`...). */
export class ListenError extends Error {
  override readonly name = 'ListenError'
  constructor (readonly setting: string, readonly hostPort: string, cause: unknown) {
    super(`${setting}: cannot listen on ${hostPort}: ${bindFailure(cause)}`, { cause })
  }
}

const BIND_FAILURES: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this machine',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name not found'
}

function bindFailure (err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return (code !== undefined ? BIND_FAILURES[code] : undefined) ?? (err instanceof Error ? err.message : String(err))
}

async function listenAs (setting: string, plane: FastifyInstance, hostPort: string): Promise<void> {
  try {
    await plane.listen(splitHostPort(hostPort))
  } catch (err: unknown) {
    throw new ListenError(setting, hostPort, err)
  }
}

export async function startGateway (config: Config): Promise<KeygateApp> {
  const app = await buildApp(config)
  if (!await app.health.waitUp(START_WAIT_MS)) {
    app.logger.warn(
      { waited_ms: START_WAIT_MS },
      'Redis did not answer; listening anyway: requests needing the registry get 503 until it does'
    )
  }
  try {
    await listenAs('listen', app.data, config.listen)
    await listenAs('admin_listen', app.admin, config.admin_listen)
    if (app.authz !== undefined && config.authz_listen !== undefined) {
      await listenAs('authz_listen', app.authz, config.authz_listen)
    }
    if (app.authzGrpc !== undefined && config.authz_grpc_listen !== undefined) {
      const hostPort = config.authz_grpc_listen
      await app.authzGrpc.listen(hostPort).catch((err: unknown) => {
        throw new ListenError('authz_grpc_listen', hostPort, err)
      })
    }
    if (app.ops !== undefined && config.ops_listen !== undefined) {
      await listenAs('ops_listen', app.ops, config.ops_listen)
    }
  } catch (err: unknown) {
    await app.close()
    throw err
  }
  app.logger.info(
    {
      listen: config.listen,
      admin_listen: config.admin_listen,
      authz_listen: config.authz_listen,
      authz_grpc_listen: config.authz_grpc_listen,
      ops_listen: config.ops_listen
    },
    'keygate listening'
  )
  return app
}

/**
 * New connections to the upstreams use the TLS files as they are now; requests in flight
 * finish on their connections. Files that cannot be used change nothing (logged).
 */
export function reloadUpstreamTls (app: KeygateApp): void {
  const problems = app.reloadUpstreamTls()
  if (problems.length === 0) app.logger.info('SIGHUP: upstream TLS files re-read')
  else app.logger.error({ problems }, 'SIGHUP: upstream TLS files not usable; the previous ones stay in use')
}

export interface ServeOptions {
  /** worker processes (node:cluster); 1 = this process serves */
  workers?: number
}

export async function serve (config: Config, opts: ServeOptions = {}): Promise<void> {
  boundHeapGrowth()
  if ((opts.workers ?? 1) > 1 && !isWorker()) {
    // a worker's own grace, and a moment for it to exit
    supervise({
      workers: opts.workers ?? 1,
      logger: createLogger(config.log.level, undefined, config.log.format),
      stopTimeoutMs: config.shutdown_grace_ms + 2000
    })
    return
  }
  let app: KeygateApp
  try {
    app = await startGateway(config)
  } catch (err: unknown) {
    if (!(err instanceof ListenError)) throw err
    // a supervisor restarts a process that exits; one left running without a listener it
    // would not. A worker tells its primary, which stops every worker and exits 1 too.
    process.stderr.write(`error: ${err.message}\n`)
    process.exit(isWorker() ? WORKER_CANNOT_LISTEN : 1)
  }
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.logger.info({ signal, grace_ms: config.shutdown_grace_ms }, 'keygate shutting down')
    const force = setTimeout(() => {
      app.logger.warn(
        { grace_ms: config.shutdown_grace_ms },
        'shutdown_grace_ms passed with requests still in flight; exiting'
      )
      flushLogger(app.logger).finally(() => process.exit(1))
    }, config.shutdown_grace_ms)
    force.unref()
    app.close().then(async () => { await flushLogger(app.logger); process.exit(0) }, () => process.exit(1))
  }
  process.once('SIGTERM', () => { shutdown('SIGTERM') })
  process.on('SIGHUP', () => { reloadUpstreamTls(app) })
  if (isWorker()) {
    // the primary coordinates shutdown (a terminal's Ctrl-C reaches every process);
    // a worker whose primary is gone stops too
    process.on('SIGINT', () => {})
    process.once('disconnect', () => { shutdown('primary gone') })
  } else {
    process.once('SIGINT', () => { shutdown('SIGINT') })
  }
}
