/**
 * `audit` (the audit trail's retention and its export as OpenTelemetry logs,
 * docs/audit-export.md) and `request_log` (each key's last decisions,
 * docs/request-log.md; not the access log line, which `log` shapes). Part of the
 * configuration schema (schema.ts).
 */
import { Type } from '@sinclair/typebox'

/** a duration above zero: `<n>s`, `<n>m`, `<n>h`, `<n>d` (parsed by duration.ts) */
const PositiveDuration = (fallback: string) => Type.String({
  pattern: '^[1-9][0-9]{0,8}[smhd]$', default: fallback, description: `a duration above zero, like ${fallback}`
})

export const AuditSchema = Type.Object({
  /** how long changes stay in the audit trail */
  retention: PositiveDuration('365d'),
  /** how long the per-minute aggregates of refused attempts stay */
  refusals_retention: PositiveDuration('30d'),
  /** the OTLP/HTTP logs endpoint, like http://collector:4318/v1/logs; absent = the trail is not exported */
  otlp_endpoint: Type.Optional(Type.String({ pattern: '^https?://[^/?#@]+(/[^?#]*)?$', description: 'an http:// or https:// URL without credentials, query or fragment, like http://collector:4318/v1/logs' })),
  /** entries shipped per export request, at most */
  export_batch: Type.Integer({ minimum: 1, maximum: 5_000, default: 500 }),
  /** how often the exporter looks for new entries once it has shipped them all */
  export_interval_ms: Type.Integer({ minimum: 50, maximum: 60_000, default: 1_000 }),
  /** how long an instance holds the export lease without renewing it (another takes over after it) */
  export_lease_ms: Type.Integer({ minimum: 1_000, maximum: 600_000, default: 15_000 })
}, { additionalProperties: false, default: {} })

export const RequestLogSchema = Type.Object({
  /** false: no decision is recorded (the endpoint answers an empty list) */
  enabled: Type.Boolean({ default: true }),
  /** decisions kept per key, newest first, for 24 h */
  per_key: Type.Integer({ minimum: 1, maximum: 1_000, default: 100 }),
  /** how often each instance writes the decisions it holds */
  flush_ms: Type.Integer({ minimum: 50, maximum: 5_000, default: 1_000 }),
  /** decisions taken between two writes, at most (of each key its last per_key held); past it dropped and counted */
  max_buffered: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 20_000 })
}, { additionalProperties: false, default: {} })
