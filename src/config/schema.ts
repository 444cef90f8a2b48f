/**
 * The configuration schema: the one source of truth for both the validator and the
 * TypeScript type. Field by field reference: docs/configuration.md.
 */
import { Type, type Static } from '@sinclair/typebox'
import { RATE_LIMIT_PATTERN } from './rate-limit.js'
import { HealthCheck, Passive, UpstreamSchema } from './upstream-schema.js'
import { LeaksSchema } from './leaks-schema.js'
import { AuditSchema, RequestLogSchema } from './events-schema.js'
import { WebhooksSchema } from './webhooks-schema.js'
import { HeaderName, PATH_PREFIX, Route, Rule } from './route-schema.js'

export { UpstreamSchema } from './upstream-schema.js'

const HostPort = Type.String({
  pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]{1,5}$', description: 'host:port'
})
/** a duration above zero: `<n>s`, `<n>m`, `<n>h`, `<n>d` (parsed by duration.ts) */
const PositiveDuration = (fallback: string) => Type.String({
  pattern: '^[1-9][0-9]{0,8}[smhd]$', default: fallback, description: `a duration above zero, like ${fallback}`
})
const RateLimit = Type.String({
  pattern: RATE_LIMIT_PATTERN, description: 'a rate limit <count>/<period>, like 100/1s'
})
export const ConfigSchema = Type.Object({
  listen: Type.String({ ...HostPort, default: '0.0.0.0:8080' }),
  admin_listen: Type.String({ ...HostPort, default: '127.0.0.1:8081' }),
  /** `/healthz`, `/readyz` and `/metrics` on a listener of their own; absent: on the admin listener */
  ops_listen: Type.Optional(Type.String(HostPort)),
  /** the authorizer listener (forward auth for nginx, Traefik, Envoy); absent = off */
  authz_listen: Type.Optional(Type.String(HostPort)),
  /** the gRPC authorizer listener (Envoy's ext_authz over gRPC, src/authorizer-grpc/); absent = off */
  authz_grpc_listen: Type.Optional(Type.String(HostPort)),
  authz_grpc: Type.Object({
    /** TLS on the gRPC authorizer listener; absent: plaintext HTTP/2 (h2c) */
    tls: Type.Optional(Type.Object({
      cert_file: Type.String({ minLength: 1 }),
      key_file: Type.String({ minLength: 1 }),
      /** with it, a client (Envoy) must present a certificate this CA issued */
      client_ca_file: Type.Optional(Type.String({ minLength: 1 }))
    }, { additionalProperties: false }))
  }, { additionalProperties: false, default: {} }),
  /** on SIGTERM/SIGINT, how long the requests in flight may take to finish before the process exits anyway */
  shutdown_grace_ms: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 30_000 }),
  authz: Type.Object({
    /**
     * the proxy in front: only its own way of naming the original request is read; auto refuses a request
     * carrying two
     */
    proxy: Type.Union([Type.Literal('auto'), Type.Literal('nginx'), Type.Literal('traefik'), Type.Literal('envoy')],
      { default: 'auto' }),
    /** Envoy's ext_authz path_prefix: removed from a decision request's own target */
    path_prefix: Type.String({
      pattern: '^(/[A-Za-z0-9._~!$&\'()*+,=:@-]+)*$',
      default: '',
      description: 'empty, or a path prefix like /ext-authz, without a trailing slash'
    }),
    /** peers whose decision requests are answered (addresses or CIDRs); any other gets 403 */
    trusted_peers: Type.Array(Type.String({ minLength: 1 }), { default: ['127.0.0.0/8', '::1'] })
  }, { additionalProperties: false, default: {} }),
  /** the admin API token: from KEYGATE_ADMIN_TOKEN only, refused in the file (load.ts); absent = token sign-in off */
  admin_token: Type.Optional(Type.String({ minLength: 1 })),
  redis: Type.Object({
    // The forms (standalone, Sentinel, Cluster) are checked by src/config/redis-url.ts,
    // whose messages never echo the URL (it may hold a password).
    url: Type.String({ minLength: 1, default: 'redis://127.0.0.1:6379', description: 'a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL' }),
    prefix: Type.String({ pattern: '^[A-Za-z0-9_.:{}-]{1,64}$', default: 'keygate:' }),
    command_timeout_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 500 }),
    connect_timeout_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 1_000 })
  }, { additionalProperties: false, default: {} }),
  keys: Type.Object({
    prefix: Type.String({
      pattern: '^[A-Za-z][A-Za-z0-9]{0,15}_$', default: 'kg_', description: 'letters and digits ending in _, like kg_'
    }),
    /** test keys' prefix (docs/test-keys.md): their requests reach only a route's `test_upstream` */
    test_prefix: Type.String({
      pattern: '^[A-Za-z][A-Za-z0-9]{0,15}_$', default: 'kgt_', description: 'letters and digits ending in _, like kgt_'
    }),
    /** Bearer tokens not in keygate's format are looked up as imported keys (docs/imports.md) */
    accept_imported: Type.Boolean({ default: false }),
    /** live keys a user may own (its personal keys and the BOT keys at the root of whose chain it is) */
    max_per_user: Type.Integer({ minimum: 1, maximum: 100_000, default: 100 }),
    /** how long a revoked or expired key's record is kept after its end; then a key creation for its owner drops it */
    purge_after: PositiveDuration('90d')
  }, { additionalProperties: false, default: {} }),
  upstreams: Type.Record(Type.String({ pattern: '^[A-Za-z0-9_-]+$' }), UpstreamSchema, { default: {} }),
  routes: Type.Array(Route, { default: [] }),
  rules: Type.Array(Rule, { default: [] }),
  /** decided beside `rules`, never changing the answer; differences counted and logged (docs/safe-change.md) */
  shadow_rules: Type.Array(Rule, { default: [] }),
  identity: Type.Object({
    header_prefix: Type.String({
      pattern: '^[A-Za-z][A-Za-z0-9-]*-$',
      default: 'X-Auth-',
      description: 'a header name prefix ending in -, like X-Auth-'
    }),
    forward_authorization: Type.Boolean({ default: false }),
    /** request headers never forwarded, from any peer (compared case-insensitively, `_` read as `-`) */
    drop_headers: Type.Array(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", description: 'a header name' }),
      { default: [] }),
    /** the signed identity assertion (src/assertion/, docs/assertion.md); its key files are read by load.ts */
    assertion: Type.Object({
      enabled: Type.Boolean({ default: false }),
      issuer: Type.String({ minLength: 1, maxLength: 256, default: 'keygate' }),
      ttl_s: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
      bind: Type.Union([Type.Literal('request'), Type.Literal('identity')], { default: 'request' }),
      /** the private key (PEM PKCS#8); KEYGATE_ASSERTION_KEY_FILE overrides it */
      key_file: Type.Optional(Type.String({ minLength: 1 })),
      /** PEM files (public or private) whose public keys stay in the JWK Set, for rotation */
      previous_key_files: Type.Array(Type.String({ minLength: 1 }), { default: [] })
    }, { additionalProperties: false, default: {} })
  }, { additionalProperties: false, default: {} }),
  cache: Type.Object({
    enabled: Type.Boolean({ default: true }),
    tracking: Type.Boolean({ default: true }),
    ttl_ms: Type.Integer({ minimum: 0, maximum: 60_000, default: 500 }),
    negative_ttl_ms: Type.Integer({ minimum: 0, maximum: 60_000, default: 500 }),
    max_entries: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 120_000 }),
    negative_max_entries: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 10_000 }),
    stale_if_error_s: Type.Integer({ minimum: 0, maximum: 86_400, default: 30 }),
    /** registry reads (cache misses and the background refill) per second, per process (src/cache/fill-limiter.ts) */
    fills_per_second: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 20_000 }),
    /** the longest a miss waits for the fill budget; one that would wait longer gets 503 at once */
    fill_wait_ms: Type.Integer({ minimum: 0, maximum: 60_000, default: 1000 }),
    /** read the most recently used keys into the cache at start (src/cache/refill.ts) */
    warm_up: Type.Boolean({ default: true })
  }, { additionalProperties: false, default: {} }),
  limits: Type.Object({
    body_bytes: Type.Integer({ minimum: 0, default: 10_485_760 }),
    header_bytes: Type.Integer({ minimum: 1024, maximum: 1_048_576, default: 16_384 }),
    /** header fields in one request; node's parser keeps 1,000 at most unless told otherwise */
    header_count: Type.Integer({ minimum: 8, maximum: 10_000, default: 100 }),
    header_timeout_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 10_000 }),
    body_idle_timeout_ms: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 30_000 }),
    unknown_keys_per_peer: Type.Object({
      per_second: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, default: 2 }),
      burst: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 100 }),
      max_peers: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 10_000 })
    }, { additionalProperties: false, default: {} })
  }, { additionalProperties: false, default: {} }),
  rate_limits: Type.Object({
    /** for every key without a `rate_limit` of its own (docs/rate-limits.md) */
    default: Type.Optional(RateLimit),
    /** anonymous requests (public rules, no key) per client address, per instance */
    anonymous: Type.Optional(RateLimit),
    /** Redis unreachable during a rate-limit check: let the request go on (counted), or 503 */
    on_error: Type.Union([Type.Literal('allow'), Type.Literal('deny')], { default: 'allow' })
  }, { additionalProperties: false, default: {} }),
  /** quotas and credits (docs/quotas.md) */
  quota: Type.Object({
    /** Redis unreachable while a metered key's allowance is checked: 503 (deny), or let it on, counted (allow) */
    on_error: Type.Union([Type.Literal('allow'), Type.Literal('deny')], { default: 'deny' }),
    /** the response header in which an upstream reports a `cost: upstream` request's cost; removed from the response */
    cost_header: Type.String({ pattern: HeaderName.pattern, description: 'a header name', default: 'X-Keygate-Cost' })
  }, { additionalProperties: false, default: {} }),
  trusted_proxies: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
  /** WebSocket pass-through on the data plane (src/websocket/, docs/websocket.md) */
  websocket: Type.Object({
    /** false: every `Upgrade` request is refused with 400 */
    enabled: Type.Boolean({ default: true }),
    /** open connections on one instance (process); over it an upgrade gets 503 */
    max_connections: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 }),
    /** open connections of one key on one instance; over it an upgrade gets 429 */
    max_connections_per_key: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 100 }),
    /** the largest message relayed, either way; a larger one closes the connection (1009) */
    max_message_bytes: Type.Integer({ minimum: 1024, maximum: 1_073_741_824, default: 16_777_216 }),
    /** bytes waiting to be written to one side before reading from the other side pauses */
    max_buffered_bytes: Type.Integer({ minimum: 1024, maximum: 1_073_741_824, default: 1_048_576 }),
    /** how long a close handshake may take before the TCP connection is dropped */
    close_timeout_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 5_000 })
  }, { additionalProperties: false, default: {} }),
  cors: Type.Object({
    allowed_origins: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    allowed_methods: Type.Array(Type.String({ pattern: '^[A-Za-z]+$' }),
      { default: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] }),
    allowed_headers: Type.Array(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }),
      { default: ['Authorization', 'Content-Type'] }),
    exposed_headers: Type.Array(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }),
      { default: ['X-Request-Id'] }),
    max_age_s: Type.Integer({ minimum: 0, maximum: 86_400, default: 600 }),
    allow_credentials: Type.Boolean({ default: false })
  }, { additionalProperties: false, default: {} }),
  admin: Type.Object({
    /** failed admin sign-ins per peer address and minute; then 429 until the minute is over */
    sign_in_failures_per_minute: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10 }),
    /**
     * the longest a BOT key created by a keygate:org:admin or keygate:keys:self principal lives; also its expiry
     * when none is asked for
     */
    self_service_max_ttl: PositiveDuration('90d')
  }, { additionalProperties: false, default: {} }),
  /**
   * signing in as yourself through an OpenID Connect provider (src/admin/sso/, docs/sso.md); checks across
   * fields: sso.ts
   */
  sso: Type.Object({
    /** absent: SSO is off */
    oidc: Type.Optional(Type.Object({
      issuer: Type.String({ pattern: '^https?://[^?#@\\s]+$', description: 'the provider\'s issuer URL, like https://login.example.com/realms/acme (no query, fragment or credentials)' }),
      client_id: Type.String({ minLength: 1, maxLength: 512 }),
      /**
       * the client secret: from KEYGATE_OIDC_CLIENT_SECRET only, refused in the file (load.ts); absent = a public
       * client (PKCE alone)
       */
      client_secret: Type.Optional(Type.String({ minLength: 1 })),
      redirect_uri: Type.String({ pattern: '^https?://[^/?#@\\s]+/[^?#\\s]*$', description: 'the console\'s callback URL as the browser reaches the admin listener, like https://keygate-admin.example.com/console/sso/callback' }),
      scopes: Type.String({
        pattern: '^[!#-\\[\\]-~]+( [!#-\\[\\]-~]+)*$',
        default: 'openid email profile',
        description: 'scope names separated by single spaces, like "openid email profile"'
      }),
      /** sub: the claim is a keygate user id; email: the verified `email` claim equals a user record's `email` */
      match: Type.Union([Type.Literal('sub'), Type.Literal('email')], { default: 'sub' }),
      /** the button's "Sign in with <display_name>" */
      display_name: Type.String({ minLength: 1, maxLength: 64, default: 'single sign-on' }),
      /** absent: a person without a keygate user is refused; present: one is created with this org and role */
      create_users: Type.Optional(Type.Object({
        org: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$', description: 'an org name' }),
        role: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$', description: 'a role name' })
      }, { additionalProperties: false }))
    }, { additionalProperties: false })),
    /** how long a session lasts after sign-in */
    session_ttl: PositiveDuration('8h')
  }, { additionalProperties: false, default: {} }),
  /** the audit trail's retention and its export as OpenTelemetry logs (events-schema.ts, docs/audit-export.md) */
  audit: AuditSchema,
  /** each key's last decisions (events-schema.ts, docs/request-log.md) */
  request_log: RequestLogSchema,
  /** per-key request counts (src/usage/counter.ts, docs/usage.md) */
  usage: Type.Object({
    /** count at all (off: no counts kept, none written; the usage endpoints answer zeros) */
    enabled: Type.Boolean({ default: true }),
    /** how long the hourly counts stay (the per-minute counts stay 48 h) */
    retention: PositiveDuration('90d'),
    /** how often each instance writes its counts; a crash loses at most this much */
    flush_ms: Type.Integer({ minimum: 50, maximum: 5_000, default: 5_000 }),
    /** distinct keys counted in memory before the counts are written early */
    max_keys: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 100_000 })
  }, { additionalProperties: false, default: {} }),
  /** leaked keys reported by secret scanners and by anyone (docs/leaks.md) */
  leaks: LeaksSchema,
  /** a key about itself on the data plane (docs/self-service.md): never forwarded, claimed by no route */
  self_service: Type.Object({
    enabled: Type.Boolean({ default: true }),
    prefix: Type.String({
      pattern: PATH_PREFIX, default: '/_keygate/v1', description: 'a path prefix like /_keygate/v1, not /'
    })
  }, { additionalProperties: false, default: {} }),
  /** signed events to the endpoints admins register (docs/webhooks.md) */
  webhooks: WebhooksSchema,
  /** W3C Trace Context and OpenTelemetry export (src/tracing/, docs/tracing.md) */
  tracing: Type.Object({
    /** the OTLP/HTTP traces endpoint, like http://collector:4318/v1/traces; absent = no spans exported */
    otlp_endpoint: Type.Optional(Type.String({ pattern: '^https?://[^/?#@]+(/[^?#]*)?$', description: 'an http:// or https:// URL without credentials, query or fragment, like http://collector:4318/v1/traces' })),
    /**
     * the OTLP/HTTP encoding: JSON (`application/json`, what keygate has always sent, read by every receiver
     * of OTLP JSON) or binary protobuf (`application/x-protobuf`: smaller and cheaper, for a collector that
     * reads it, as the OpenTelemetry Collector does); absent: http/json (span-export.ts)
     */
    protocol: Type.Optional(Type.Union(
      [Type.Literal('http/protobuf'), Type.Literal('http/json')], { default: 'http/json' }
    )),
    /** the share of traces keygate starts that are sampled (0..1) */
    sample_ratio: Type.Number({ minimum: 0, maximum: 1, default: 1 }),
    /**
     * a client's `traceparent` sampled flag decides for its trace (OpenTelemetry's ParentBased sampler); false:
     * sample_ratio decides every trace
     */
    parent_based: Type.Boolean({ default: true }),
    service_name: Type.String({ minLength: 1, maxLength: 256, default: 'keygate' })
  }, { additionalProperties: false, default: {} }),
  log: Type.Object({
    level: Type.Union([
      Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'),
      Type.Literal('info'), Type.Literal('debug'), Type.Literal('silent')
    ], { default: 'info' }),
    /** json: one JSON object a line (for a log shipper); pretty: text for a person at a terminal */
    format: Type.Union([Type.Literal('json'), Type.Literal('pretty')], { default: 'json' }),
    /**
     * the share of the lines of requests that passed (answered below 500, no shadow disagreement) that are
     * written, chosen at random; every refusal's and error's line is always written (src/http/request-log.ts)
     */
    allowed_sample_ratio: Type.Number({ minimum: 0, maximum: 1, default: 1 })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false })

export type Config = Static<typeof ConfigSchema>
export type RuleConfig = Static<typeof Rule>
export type RouteConfig = Static<typeof Route>
export type UpstreamConfig = Static<typeof UpstreamSchema>
export type HealthCheckConfig = Static<typeof HealthCheck>
export type PassiveConfig = Static<typeof Passive>
export type AssertionConfig = Config['identity']['assertion']
export type WebSocketConfig = Config['websocket']
export type TracingConfig = Config['tracing']
export type WebhooksConfig = Config['webhooks']
export type OidcConfig = NonNullable<Config['sso']['oidc']>
