/**
 * The active health check of one target: `GET <health_check.path>` every `interval` on a
 * connection of its own (a check never waits behind the requests it judges), passed when
 * the target answers one of `expected_statuses` (200 to 399 without them) within
 * `timeout`. The first check runs one interval after the start (targets start up).
 * The result goes to the target's health
 * (target-health.ts), which applies the thresholds.
 */
import { Client } from 'undici'
import type { HealthCheckConfig } from '../../config/schema.js'
import { parseCheckDuration } from '../../config/upstreams.js'
import type { ConnectOptions } from './connect-options.js'

export interface HealthCheck {
  stop: () => Promise<void>
}

export function startHealthCheck (origin: string, check: HealthCheckConfig, connect: ConnectOptions,
  report: (passed: boolean) => void): HealthCheck {
  const intervalMs = parseCheckDuration(check.interval) ?? 5000
  const timeoutMs = parseCheckDuration(check.timeout) ?? 2000
  const expected = check.expected_statuses === undefined ? undefined : new Set(check.expected_statuses)
  const passes = (status: number): boolean =>
    expected === undefined ? status >= 200 && status < 400 : expected.has(status)
  const client = new Client(origin, {
    connect: { ...connect, timeout: Math.min(connect.timeout, timeoutMs) },
    pipelining: 1
  })
  let stopped = false
  let timer: NodeJS.Timeout | undefined

  const once = async (): Promise<void> => {
    let passed = false
    try {
      const res = await client.request({
        method: 'GET',
        path: check.path,
        // (Host is the origin's, written by undici: a Host set here would be sent as the TLS
        // server name in place of the configured `servername`)
        headers: { 'user-agent': 'keygate-health-check' },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs)
      })
      await res.body.dump()
      passed = passes(res.statusCode)
    } catch {
      passed = false
    }
    if (stopped) return
    report(passed)
    timer = setTimeout(run, intervalMs)
    timer.unref()
  }
  const run = (): void => { once().catch(() => {}) }
  timer = setTimeout(run, intervalMs)
  timer.unref()

  return {
    async stop () {
      stopped = true
      clearTimeout(timer)
      await client.destroy().catch(() => {})
    }
  }
}
