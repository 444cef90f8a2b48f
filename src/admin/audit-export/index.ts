/**
 * The audit trail shipped as OpenTelemetry logs (`audit.otlp_endpoint`,
 * docs/audit-export.md): a background part of the gateway (src/lifecycle.ts) that
 * reads the entries after its cursor, hands them to OpenTelemetry's OTLP/HTTP logs
 * exporter, and moves the cursor once the endpoint accepted them:
 *
 * - at least once, in order per entry id: a batch is the next entries after the
 *   cursor, oldest first; the cursor moves past a batch only once it was accepted, and a
 *   failed batch is sent again (with a backoff), whole, before anything after it.
 * - where it stopped: the cursor is in Redis, so a restarted gateway (or another
 *   instance) resumes after the last accepted entry; entries written meanwhile follow.
 * - one instance at a time: the one holding a lease in Redis, renewed before each
 *   batch (store/audit-export.ts); a graceful stop ships the batch in hand, then gives
 *   the lease up.
 *
 * Its Redis connection is its own (the registry's lookups never wait behind it); it
 * reaches the registry through the admin actions, as the admin wing's own process
 * (`FULL_ADMIN`), recorded as nothing: it only reads the trail.
 */
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Background } from '../../lifecycle.js'
import type { Config } from '../../config/schema.js'
import { redactedUrl } from '../../config/redis-url.js'
import { auditExportMetrics, type AuditExportStats } from '../../metrics/events-metrics.js'
import type { Metrics } from '../../metrics/metrics.js'
import { createRedis } from '../../registry/redis-client.js'
import { adminActions, adminWing } from '../actions/index.js'
import { FULL_ADMIN } from '../model/principal.js'
import type { AuditEntry } from '../model/views.js'
import { logExporter, type AuditShipper } from './otlp.js'

/** the longest wait after failed exports in a row */
const MAX_BACKOFF_MS = 30_000

/** The export as a background part, when `audit.otlp_endpoint` is set. */
export async function startAuditExport (
  config: Config, logger: Logger, metrics: Metrics
): Promise<Background | undefined> {
  const endpoint = config.audit.otlp_endpoint
  if (endpoint === undefined) return undefined
  const redis = createRedis(config.redis)
  redis.on('error', () => { metrics.redis.connectionError() })
  const actions = adminActions(adminWing(config, redis), FULL_ADMIN, 'audit-export').auditExport
  const leaseMs = config.audit.export_lease_ms
  const shipper = await logExporter(endpoint, config.tracing.service_name, Math.min(10_000, Math.floor(leaseMs / 2)))
  const exporter = new AuditExporter({
    actions,
    shipper,
    batch: config.audit.export_batch,
    intervalMs: config.audit.export_interval_ms,
    leaseMs,
    onError: (err) => {
      logger.warn({ redis: redactedUrl(config.redis.url), cause: (err as Error).message },
        'audit export: entries cannot be shipped yet')
    }
  })
  auditExportMetrics(metrics.registry, () => exporter.stats)
  return {
    name: 'audit export',
    start: () => { exporter.start() },
    stop: async () => {
      await exporter.stop()
      redis.disconnect()
    }
  }
}

export interface ExportActions {
  holdLease: (token: string, ms: number) => Promise<boolean>
  releaseLease: (token: string) => Promise<void>
  pending: (count: number) => Promise<{ cursor: string | undefined, entries: AuditEntry[] }>
  shipped: (token: string, id: string) => Promise<boolean>
}

export interface AuditExporterOptions {
  actions: ExportActions
  shipper: AuditShipper
  batch: number
  intervalMs: number
  leaseMs: number
  /** the first failure of a run (Redis or the endpoint) */
  onError?: (err: unknown) => void
}

export class AuditExporter {
  private readonly token = randomUUID()
  private running: Promise<void> | undefined
  private stopped = false
  private wake: (() => void) | undefined
  private failuresInRow = 0
  private readonly s = { shipped: 0, failures: 0, pending: 0, lagSeconds: 0, leader: 0 }

  constructor (private readonly o: AuditExporterOptions) {}

  get stats (): AuditExportStats { return this.s }

  start (): void {
    this.running ??= this.loop()
  }

  /** Ships the batch in hand, gives the lease up, and shuts the exporter down. */
  async stop (): Promise<void> {
    this.stopped = true
    this.wake?.()
    await this.running
    if (this.s.leader === 1) await this.o.actions.releaseLease(this.token).catch(() => {})
    this.s.leader = 0
    await this.o.shipper.shutdown().catch(() => {})
  }

  private async loop (): Promise<void> {
    while (!this.stopped) {
      let wait = this.o.intervalMs
      try {
        wait = await this.step()
        this.failuresInRow = 0
      } catch (err: unknown) {
        this.s.failures++
        if (this.failuresInRow === 0) this.o.onError?.(err)
        this.failuresInRow++
        wait = Math.min(MAX_BACKOFF_MS, this.o.intervalMs * 2 ** Math.min(this.failuresInRow, 10))
      }
      if (wait > 0 && !this.stopped) await this.sleep(wait)
    }
  }

  /** One batch; the time to wait before the next (0: more may wait). */
  private async step (): Promise<number> {
    if (!await this.o.actions.holdLease(this.token, this.o.leaseMs)) {
      this.s.leader = 0
      this.s.pending = 0
      this.s.lagSeconds = 0
      return Math.max(this.o.intervalMs, Math.floor(this.o.leaseMs / 3))
    }
    this.s.leader = 1
    const { entries } = await this.o.actions.pending(this.o.batch)
    this.s.pending = entries.length
    const oldest = entries[0]
    this.s.lagSeconds = oldest === undefined ? 0 : Math.max(0, (Date.now() - entryMs(oldest)) / 1000)
    if (oldest === undefined) return this.o.intervalMs
    await this.o.shipper.ship(entries)
    const last = entries[entries.length - 1] as AuditEntry
    this.s.shipped += entries.length
    // (the lease lost meanwhile: the next holder ships this batch again, at least once)
    await this.o.actions.shipped(this.token, last.id)
    this.s.pending = 0
    this.s.lagSeconds = 0
    return entries.length < this.o.batch ? this.o.intervalMs : 0
  }

  private async sleep (ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms)
      function done (): void { clearTimeout(timer); resolve() }
      this.wake = done
    })
    this.wake = undefined
  }
}

/** when an entry was written: its stream id's milliseconds */
function entryMs (entry: AuditEntry): number {
  return Number(entry.id.slice(0, entry.id.indexOf('-')))
}
