/**
 * The process entry for `keygate serve`: build the planes, listen, and close
 * gracefully on SIGINT/SIGTERM (in-flight requests finish; new ones get 503).
 */
import { buildApp, type KeygateApp } from './app.js'
import type { Config } from './config/schema.js'
import { createLogger, flushLogger } from './logger.js'
import { boundHeapGrowth } from './heap-growth.js'
import { isWorker, supervise } from './workers.js'

export function splitHostPort (hostPort: string): { host: string, port: number } {
  const i = hostPort.lastIndexOf(':')
  return { host: hostPort.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(hostPort.slice(i + 1)) }
}

export async function startGateway (config: Config): Promise<KeygateApp> {
  const app = await buildApp(config)
  await app.data.listen(splitHostPort(config.listen))
  await app.admin.listen(splitHostPort(config.admin_listen))
  if (app.authz !== undefined && config.authz_listen !== undefined) await app.authz.listen(splitHostPort(config.authz_listen))
  app.logger.info({ listen: config.listen, admin_listen: config.admin_listen, authz_listen: config.authz_listen }, 'keygate listening')
  return app
}

export interface ServeOptions {
  /** worker processes (node:cluster); 1 = this process serves */
  workers?: number
}

export async function serve (config: Config, opts: ServeOptions = {}): Promise<void> {
  boundHeapGrowth()
  if ((opts.workers ?? 1) > 1 && !isWorker()) {
    supervise({ workers: opts.workers ?? 1, logger: createLogger(config.log.level) })
    return
  }
  const app = await startGateway(config)
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.logger.info({ signal }, 'keygate shutting down')
    const force = setTimeout(() => process.exit(1), 10_000)
    force.unref()
    app.close().then(async () => { await flushLogger(app.logger); process.exit(0) }, () => process.exit(1))
  }
  process.once('SIGTERM', () => { shutdown('SIGTERM') })
  if (isWorker()) {
    // the primary coordinates shutdown (a terminal's Ctrl-C reaches every process);
    // a worker whose primary is gone stops too
    process.on('SIGINT', () => {})
    process.once('disconnect', () => { shutdown('primary gone') })
  } else {
    process.once('SIGINT', () => { shutdown('SIGINT') })
  }
}
