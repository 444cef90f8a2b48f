/**
 * Every Redis key the registry uses, in one place. Reference: docs/registry.md.
 * Records (hashes an admin may edit with redis-cli) are read by the gateway;
 * indexes and usage data are written by the CLI and admin API.
 */
export interface RedisKeys {
  key: (keyId: string) => string
  user: (userId: string) => string
  role: (role: string) => string
  /** an org's record (`rate_limit`, `name`) */
  org: (org: string) => string
  /** an identity's record (`org`, `external_id`, `meta`, `rate_limit`, `quota`, `credits`; docs/identities.md) */
  identity: (id: string) => string
  /** set of every identity id */
  identities: string
  /** hash external_id -> identity id of one org: an external id is unique in its org */
  orgIdentities: (org: string) => string
  /** set of the key ids that name an identity */
  identityKeys: (id: string) => string
  /** set of key ids created for a user (personal keys, and BOT keys they created) */
  userKeys: (userId: string) => string
  /** set of key ids in an org */
  orgKeys: (org: string) => string
  /** set of user ids in an org */
  orgUsers: (org: string) => string
  /** string: the user whose record holds this email (lower case): one user per sign-in email (docs/sso.md) */
  userEmail: (email: string) => string
  /** string: the key id of an imported key, by the SHA-256 (hex) of the whole token (docs/imports.md) */
  imported: (tokenSha256: string) => string
  /** set of every key id */
  keys: string
  /** set of every user id */
  users: string
  /** set of every role name */
  roles: string
  /** hash keyId -> last_used_at, kept out of the cached key records */
  usage: string
  /** stream of admin changes (trimmed by age) */
  audit: string
  /** hash of one minute's refused attempts, counted per principal, action and org (expires) */
  auditRefused: (minuteMs: number) => string
  /** sorted set of the minutes that have refused attempts (score: the minute, epoch ms) */
  auditRefusedIndex: string
  /** string: the id of the last audit entry shipped to the OTLP endpoint (src/admin/audit-export/) */
  auditExportCursor: string
  /** string: the instance shipping the audit trail, its token (expires: a lease) */
  auditExportLease: string
  /** set of every org with a record */
  orgs: string
  /** an SSO session (src/admin/sso/), by the SHA-256 of its id (expires) */
  session: (digest: string) => string
  /** set of the session digests of a user (ended with the user's deactivation) */
  userSessions: (userId: string) => string
  /** an SSO sign-in under way (state, nonce, PKCE verifier), by the SHA-256 of its cookie (expires, used once) */
  ssoLogin: (digest: string) => string
  /** a key's request counts of one hour, per minute (src/usage/counter.ts); `hour`, `day`: since the epoch */
  usageMinutes: (keyId: string, hour: number) => string
  /** a key's request counts of one day, per hour */
  usageHours: (keyId: string, day: number) => string
  /** an org's request counts of one hour, per minute */
  orgUsageMinutes: (org: string, hour: number) => string
  /** an org's request counts of one day, per hour */
  orgUsageHours: (org: string, day: number) => string
  /** list: a key's last decisions, newest first (src/usage/key-requests.ts; trimmed, expires after 24 h) */
  keyRequests: (keyId: string) => string
  /** rate-limit buckets (src/ratelimit/script.ts), under this prefix: `<level>:<id>:<period ms>` */
  rateLimit: string
  /**
   * a quota's period and count and the credits spent (src/quota/script.ts), by `key:<keyId>` (the key whose
   * count a key continues) or `org:<org>`
   */
  meter: (level: 'key' | 'org' | 'identity', id: string) => string
  /**
   * what a key's shadow restriction would refuse (src/usage/shadow-refusals.ts, docs/safe-change.md): a hash with
   * `refused` (a count) and `last_at`, and a list of the last examples (`:recent`)
   */
  shadowRefusals: (keyId: string) => string
  shadowRecent: (keyId: string) => string
  /** sorted set of key ids by `expires_at` (score: epoch ms), for `key.expiring` (src/webhooks/expiring.ts) */
  keyExpiry: string
  /** string: where the once-per-deployment fill of `keyExpiry` goes on (a SCAN cursor), `done` once it is over */
  keyExpiryBackfill: string
  /** a webhook endpoint (hash: url, events, org, secret, ...), docs/webhooks.md */
  webhook: (id: string) => string
  /** set of every webhook endpoint id */
  webhooks: string
  /** stream of `key.expiring` and `quota.threshold` events waiting to be fanned out (consumer group `dispatch`) */
  webhookEvents: string
  /** string: the id of the last audit entry whose events were fanned out to endpoints (src/webhooks/follow.ts) */
  webhookCursor: string
  /** sorted set of delivery ids by their next attempt (score: epoch ms) */
  webhookDue: string
  /** one delivery of one event to one endpoint (hash, expires once settled) */
  webhookDelivery: (id: string) => string
  /** sorted set of an endpoint's delivery ids (score: the event's time) */
  webhookDeliveries: (endpointId: string) => string
  /** string, set once: a quota's threshold reached in one period (`quota.threshold` sent once) */
  quotaThreshold: (meter: string, periodStart: number, percent: number) => string
}

export function redisKeys (prefix: string): RedisKeys {
  return {
    key: (id) => `${prefix}key:${id}`,
    user: (id) => `${prefix}user:${id}`,
    role: (name) => `${prefix}role:${name}`,
    org: (name) => `${prefix}org:${name}`,
    identity: (id) => `${prefix}identity:${id}`,
    identities: `${prefix}identities`,
    orgIdentities: (org) => `${prefix}org-identities:${org}`,
    identityKeys: (id) => `${prefix}identity-keys:${id}`,
    userKeys: (id) => `${prefix}user-keys:${id}`,
    orgKeys: (org) => `${prefix}org-keys:${org}`,
    orgUsers: (org) => `${prefix}org-users:${org}`,
    userEmail: (email) => `${prefix}user-email:${email}`,
    imported: (sha) => `${prefix}imported:${sha}`,
    keys: `${prefix}keys`,
    users: `${prefix}users`,
    roles: `${prefix}roles`,
    usage: `${prefix}usage`,
    audit: `${prefix}audit`,
    auditRefused: (minuteMs) => `${prefix}audit:refused:${minuteMs}`,
    auditRefusedIndex: `${prefix}audit:refused`,
    auditExportCursor: `${prefix}audit-export:cursor`,
    auditExportLease: `${prefix}audit-export:lease`,
    orgs: `${prefix}orgs`,
    session: (digest) => `${prefix}session:${digest}`,
    userSessions: (id) => `${prefix}user-sessions:${id}`,
    ssoLogin: (digest) => `${prefix}sso-login:${digest}`,
    // (the key id or org is the hash tag: one key's hashes share a Cluster slot)
    usageMinutes: (id, hour) => `${prefix}usage:{${id}}:m:${hour}`,
    usageHours: (id, day) => `${prefix}usage:{${id}}:h:${day}`,
    orgUsageMinutes: (org, hour) => `${prefix}usage-org:{${org}}:m:${hour}`,
    orgUsageHours: (org, day) => `${prefix}usage-org:{${org}}:h:${day}`,
    keyRequests: (id) => `${prefix}requests:{${id}}`,
    rateLimit: `${prefix}ratelimit:`,
    meter: (level, id) => `${prefix}meter:${level}:${id}`,
    shadowRefusals: (id) => `${prefix}shadow:{${id}}`,
    shadowRecent: (id) => `${prefix}shadow:{${id}}:recent`,
    keyExpiry: `${prefix}key-expiry`,
    keyExpiryBackfill: `${prefix}key-expiry:backfill`,
    webhook: (id) => `${prefix}webhook:${id}`,
    webhooks: `${prefix}webhooks`,
    webhookEvents: `${prefix}webhook-events`,
    webhookCursor: `${prefix}webhook-cursor`,
    webhookDue: `${prefix}webhook-due`,
    webhookDelivery: (id) => `${prefix}webhook-delivery:${id}`,
    webhookDeliveries: (id) => `${prefix}webhook-deliveries:${id}`,
    quotaThreshold: (meter, period, percent) => `${prefix}quota-threshold:${meter}:${period}:${percent}`
  }
}

/** A key prefix as a SCAN pattern matches it literally. */
export function escapeGlob (text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}
