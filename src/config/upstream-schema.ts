/**
 * The schema of one upstream (`upstreams.<name>`): one origin or several targets, their
 * balancing, health checks and ejection, and upstream TLS. Part of the configuration
 * schema (schema.ts); field by field reference: docs/configuration.md, docs/routing.md.
 */
import { Type } from '@sinclair/typebox'

const Origin = Type.String({ pattern: '^https?://[^/?#]+/?$', description: 'origin of the upstream, without a path' })
/** a health check's duration: `<n>ms`, `<n>s`, `<n>m` (parsed by config/upstreams.ts) */
const CheckDuration = (fallback: string) => Type.String({
  pattern: '^[1-9][0-9]{0,8}(ms|s|m)$',
  default: fallback,
  description: `a duration above zero, like ${fallback} or 500ms`
})

/** An active health check of every target (data-plane/upstream-pool/, docs/routing.md). */
export const HealthCheck = Type.Object({
  path: Type.String({
    pattern: '^/[A-Za-z0-9._~!$&\'()*+,;=:@/%-]*$', default: '/', description: 'a path starting with /, like /health'
  }),
  interval: CheckDuration('5s'),
  timeout: CheckDuration('2s'),
  /** consecutive failed checks that take a target out */
  unhealthy_after: Type.Integer({ minimum: 1, maximum: 100, default: 3 }),
  /** consecutive passed checks that put it back */
  healthy_after: Type.Integer({ minimum: 1, maximum: 100, default: 2 }),
  /** the statuses that pass; absent: 200 to 399 */
  expected_statuses: Type.Optional(Type.Array(Type.Integer({ minimum: 100, maximum: 599 }),
    { minItems: 1, maxItems: 100 }))
}, { additionalProperties: false })

/** Passive ejection: connection failures of real requests take a target out. */
export const Passive = Type.Object({
  /** consecutive connection failures (refused, reset, connect timeout, TLS) that take a target out */
  failures: Type.Integer({ minimum: 1, maximum: 1000, default: 3 }),
  /** without an active health check: how long an ejected target stays out */
  ejection: CheckDuration('30s')
}, { additionalProperties: false })

export const UpstreamSchema = Type.Object({
  /** one origin: exactly one of url and targets */
  url: Type.Optional(Origin),
  /** several origins of the same service, balanced (data-plane/upstream-pool/) */
  targets: Type.Optional(Type.Array(Origin, { minItems: 1, maxItems: 64 })),
  /** with targets: round_robin when absent */
  balancing: Type.Optional(Type.Union([Type.Literal('round_robin'), Type.Literal('least_requests')])),
  health_check: Type.Optional(HealthCheck),
  passive: Type.Optional(Passive),
  /** https: the CA certificates (PEM) that verify the upstream's certificate, instead of the system's */
  ca_file: Type.Optional(Type.String({ minLength: 1 })),
  /** https: the name verified and sent as SNI, instead of the URL's host */
  servername: Type.Optional(Type.String({
    pattern: '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$', description: 'a DNS name'
  })),
  /** https, mTLS: the client certificate (PEM) and its private key, both or neither */
  client_cert_file: Type.Optional(Type.String({ minLength: 1 })),
  client_key_file: Type.Optional(Type.String({ minLength: 1 })),
  timeout_ms: Type.Integer({ minimum: 1, maximum: 3_600_000, default: 30_000 }),
  connect_timeout_ms: Type.Integer({ minimum: 1, maximum: 600_000, default: 5_000 }),
  connections: Type.Integer({ minimum: 1, maximum: 65_535, default: 256 })
}, { additionalProperties: false })
