/**
 * The process entry for `keygate serve`: build both planes, listen, and close
 * gracefully on SIGINT/SIGTERM (in-flight requests finish; new ones get 503).
 */
import { buildApp, type KeygateApp } from './app.js'
import type { Config } from './config/schema.js'
import { flushLogger } from './logger.js'

export function splitHostPort (hostPort: string): { host: string, port: number } {
  const i = hostPort.lastIndexOf(':')
  return { host: hostPort.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(hostPort.slice(i + 1)) }
}

export async function startGateway (config: Config): Promise<KeygateApp> {
  const app = await buildApp(config)
  await app.data.listen(splitHostPort(config.listen))
  await app.admin.listen(splitHostPort(config.admin_listen))
  app.logger.info({ listen: config.listen, admin_listen: config.admin_listen }, 'keygate listening')
  return app
}

export async function serve (config: Config): Promise<void> {
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
  process.once('SIGINT', () => shutdown('SIGINT'))
  process.once('SIGTERM', () => shutdown('SIGTERM'))
}
