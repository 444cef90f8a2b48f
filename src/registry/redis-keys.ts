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
  /** set of key ids created for a user (personal keys, and BOT keys they created) */
  userKeys: (userId: string) => string
  /** set of key ids in an org */
  orgKeys: (org: string) => string
  /** set of user ids in an org */
  orgUsers: (org: string) => string
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
  /** set of every org with a record */
  orgs: string
  /** rate-limit buckets (src/ratelimit/script.ts), under this prefix: `<level>:<id>:<period ms>` */
  rateLimit: string
}

export function redisKeys (prefix: string): RedisKeys {
  return {
    key: (id) => `${prefix}key:${id}`,
    user: (id) => `${prefix}user:${id}`,
    role: (name) => `${prefix}role:${name}`,
    org: (name) => `${prefix}org:${name}`,
    userKeys: (id) => `${prefix}user-keys:${id}`,
    orgKeys: (org) => `${prefix}org-keys:${org}`,
    orgUsers: (org) => `${prefix}org-users:${org}`,
    imported: (sha) => `${prefix}imported:${sha}`,
    keys: `${prefix}keys`,
    users: `${prefix}users`,
    roles: `${prefix}roles`,
    usage: `${prefix}usage`,
    audit: `${prefix}audit`,
    auditRefused: (minuteMs) => `${prefix}audit:refused:${minuteMs}`,
    auditRefusedIndex: `${prefix}audit:refused`,
    orgs: `${prefix}orgs`,
    rateLimit: `${prefix}ratelimit:`
  }
}
