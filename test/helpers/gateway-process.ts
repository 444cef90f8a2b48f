/**
 * Gateway instances as a deployment runs them: each a `keygate serve` process of its own
 * (dist/, built by `npm test` and `npm run chaos` before tap runs), on free ports, with
 * its own cache and Redis connections, sharing one registry. For the failover suites
 * (test/integration/failover/). Each is stopped with the test (SIGTERM, then SIGKILL).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { BIN } from './cli.js'
import { freePort } from './net.js'
import { send } from './raw-http.js'
import { until } from './wait.js'

export interface GatewayProcess {
  name: string
  port: number
  adminPort: number
  pid: number | undefined
  /** stdout's JSON lines so far (the request log lines and the rest), parsed */
  lines: () => Array<Record<string, unknown>>
  stderr: () => string
  /** kill -TERM, and the exit code once it exited (a graceful stop: each background part drained) */
  stop: () => Promise<number | null>
}

export interface GatewayProcessOptions {
  name: string
  /** the Redis URL (KEYGATE_REDIS_URL): standalone, redis+sentinel:// or redis+cluster:// */
  redisUrl: string
  prefix: string
  upstreamUrl: string
  /** more of the config file, merged over the defaults below (top-level keys replace) */
  extra?: Record<string, unknown>
  /** more environment for the process (NODE_OPTIONS, say) */
  env?: Record<string, string>
}

/** the rules of the failover suites: a reader's path and an org's */
export const FAILOVER_RULES = [
  { method: 'GET', path: '/api/v1/users', permissions: ['users:read'] },
  { method: '*', path: '/api/v1/orgs/:org/*', permissions: ['orgs:read'], org_param: 'org' }
]

export async function startGatewayProcess (t: Test, o: GatewayProcessOptions): Promise<GatewayProcess> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const dir = mkdtempSync(join(tmpdir(), 'keygate-failover-'))
  const file = join(dir, 'keygate.yaml')
  writeFileSync(file, JSON.stringify({
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${adminPort}`,
    redis: { prefix: o.prefix },
    upstreams: { core: { url: o.upstreamUrl, timeout_ms: 5000, connect_timeout_ms: 1000 } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    rules: FAILOVER_RULES,
    ...o.extra
  }))
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { PATH: process.env.PATH, KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: o.redisUrl, ...o.env }
  })
  const lines: Array<Record<string, unknown>> = []
  let pending = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => {
    pending += d.toString()
    const parts = pending.split('\n')
    pending = parts.pop() ?? ''
    for (const p of parts) {
      if (!p.startsWith('{')) continue
      try { lines.push(JSON.parse(p) as Record<string, unknown>) } catch { /* a line cut short at exit */ }
    }
  })
  child.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-8192) })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  })
  await until(async () => (await send(adminPort, 'GET', '/readyz').catch(() => undefined))?.status === 200,
    60_000, `${o.name} ready (${stderr})`, 50)
  const stop = async (): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { resolve(code) }))
    child.kill('SIGTERM')
    return await exited
  }
  return { name: o.name, port, adminPort, pid: child.pid, lines: () => lines, stderr: () => stderr, stop }
}
