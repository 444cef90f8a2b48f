/**
 * The metrics of the request log per key (src/usage/key-requests.ts) and of the audit
 * export (src/admin/audit-export/): what they hold, wrote, lost, and how far the export
 * lags behind the audit trail. Read at scrape time; never a key id.
 */
import type { Registry } from 'prom-client'
import { registrar } from './registrar.js'

export interface RequestLogStats {
  readonly held: number
  readonly dropped: number
  readonly written: number
}

export interface AuditExportStats {
  /** entries the OTLP endpoint accepted from this instance */
  readonly shipped: number
  /** export requests that failed (retried from the same entry) */
  readonly failures: number
  /** entries read and not yet shipped, at most one batch ahead; 0 when caught up */
  readonly pending: number
  /** seconds since the oldest entry not yet shipped was written; 0 when caught up */
  readonly lagSeconds: number
  /** 1 while this instance holds the export lease */
  readonly leader: number
}

export function requestLogMetrics (registry: Registry, read: () => RequestLogStats): void {
  const r = registrar(registry)
  r.level('keygate_request_log_held',
    'Decisions taken for the per-key request log since the last write (at most request_log.max_buffered; ' +
    'of each key its last request_log.per_key are held).', 'sum', () => read().held)
  r.total('keygate_request_log_written_total', 'Decisions written to the per-key request log in Redis.',
    () => read().written)
  r.total('keygate_request_log_dropped_total',
    'Decisions never written to the per-key request log: the buffer was full (request_log.max_buffered) or ' +
    'their write failed.', () => read().dropped)
}

export function auditExportMetrics (registry: Registry, read: () => AuditExportStats): void {
  const r = registrar(registry)
  r.total('keygate_audit_export_shipped_total', 'Audit entries the OTLP logs endpoint accepted from this instance.',
    () => read().shipped)
  r.total('keygate_audit_export_failures_total',
    'Audit export requests that failed; the same entries are sent again (at least once, in order).',
    () => read().failures)
  r.level('keygate_audit_export_pending_entries',
    'Audit entries written and not yet shipped, counted up to one batch (audit.export_batch) ahead; 0 when ' +
    'caught up. Read on the instance holding the export lease.', 'max', () => read().pending)
  r.level('keygate_audit_export_lag_seconds',
    'Age of the oldest audit entry not yet shipped; 0 when caught up. Read on the instance holding the export ' +
    'lease.', 'max', () => read().lagSeconds)
  r.level('keygate_audit_export_leader', '1 while this instance holds the audit export lease.', 'max',
    () => read().leader)
}
