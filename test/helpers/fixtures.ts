/**
 * Registry fixtures: roles, users and keys written through the same admin actions the
 * CLI uses (a full admin, recorded as `cli:test`), into a real Redis. Each key fixture
 * returns the raw key, shown once.
 */
import type { RegistryClient } from '../../src/registry/redis-client.js'
import { adminActions, type AdminActions, type AuditOptions } from '../../src/admin/actions/index.js'
import { FULL_ADMIN } from '../../src/admin/model/principal.js'
import { redisKeys, type RedisKeys } from '../../src/registry/redis-keys.js'
import { generateKey, type KeyPrefixes } from '../../src/registry/key-format.js'

/** the default of `admin.self_service_max_ttl` */
export const SELF_SERVICE_MAX_TTL_MS = 90 * 86_400_000

/**
 * The admin actions of a full admin recorded as `actor` (what a script on the registry holds). Its worlds may give one
 * user any number of keys (load and failover tests): `keys.max_per_user` is tested through the configured gateway
 * (test/regressions/keys-per-user-unbounded.test.ts).
 */
export function fullAdmin (
  redis: RegistryClient, keys: RedisKeys, keyPrefix: KeyPrefixes, actor: string, audit?: AuditOptions
): AdminActions {
  return adminActions(
    {
      redis,
      keys,
      keyPrefix,
      selfServiceMaxTtlMs: SELF_SERVICE_MAX_TTL_MS,
      keyBounds: { maxPerUser: 1_000_000, purgeAfterMs: 90 * 86_400_000 },
      audit
    },
    FULL_ADMIN,
    actor
  )
}

export interface KeyFixture {
  id: string
  key: string
}

export class Fixtures {
  /** the admin actions of a full admin, `cli:test` */
  readonly admin: AdminActions
  readonly keys: RedisKeys

  constructor (readonly redis: RegistryClient, readonly prefix: string, keyPrefix: KeyPrefixes = 'kg_') {
    this.keys = redisKeys(prefix)
    this.admin = fullAdmin(redis, this.keys, keyPrefix, 'cli:test')
  }

  async role (name: string, permissions: string[]): Promise<void> {
    await this.admin.putRole(name, permissions)
  }

  async user (id: string, org: string, role: string): Promise<void> {
    await this.admin.putUser(id, { org, role })
  }

  async personalKey (user: string, opts: { expiresInMs?: number, name?: string } = {}): Promise<KeyFixture> {
    const { result: k } = await this.admin.createKey({ type: 'personal', user, ...opts })
    return { id: k.id, key: k.key }
  }

  /** `createdBy`: a user id (recorded as `user:<id>`) */
  async botKey (role: string, org: string,
    opts: { expiresInMs?: number, name?: string, createdBy?: string } = {}): Promise<KeyFixture> {
    const { result: k } = await this.admin.createKey({ type: 'bot', role, org, ...opts })
    return { id: k.id, key: k.key }
  }

  /**
   * Many BOT keys at once, for listings of thousands: the records and index entries the
   * store writes (src/admin/store/keys.ts addKey), in one pipeline, without the audit
   * trail. Returns the key ids, in the order of `names`.
   */
  async bulkBotKeys (role: string, org: string, names: string[]): Promise<string[]> {
    return (await this.bulkBotKeyFixtures(role, org, names)).map((k) => k.id)
  }

  /** bulkBotKeys, returning each raw key too (for load against thousands of keys). */
  async bulkBotKeyFixtures (role: string, org: string, names: string[]): Promise<KeyFixture[]> {
    const pipeline = this.redis.pipeline()
    const createdAt = new Date().toISOString()
    const keys = names.map((name) => {
      const { id, hash, key } = generateKey('kg_')
      const record = { type: 'bot', hash, org, role, name, status: 'active' }
      pipeline.hset(this.keys.key(id), { ...record, created_at: createdAt, created_by: 'cli:test' })
        .sadd(this.keys.keys, id).sadd(this.keys.orgKeys(org), id)
      return { id, key }
    })
    for (const [err] of await pipeline.exec() ?? []) if (err !== null) throw err
    return keys
  }

  /** A direct edit, as an admin would make with redis-cli: HSET <record> <field> <value>. */
  async hset (redisKey: string, field: string, value: string): Promise<void> {
    await this.redis.hset(redisKey, field, value)
  }

  /**
   * The standard world used by most tests:
   *   roles  reader (users:read), writer (users:*), orgreader (orgs:read), admin (*: every
   *          permission but the keygate: ones, so no administrator), none ()
   *   users  alice (acme, reader), bob (acme, writer), carol (globex, orgreader)
   */
  async standardWorld (): Promise<void> {
    await this.role('reader', ['users:read'])
    await this.role('writer', ['users:*'])
    await this.role('orgreader', ['orgs:read'])
    await this.role('admin', ['*'])
    await this.role('none', [])
    await this.user('alice', 'acme', 'reader')
    await this.user('bob', 'acme', 'writer')
    await this.user('carol', 'globex', 'orgreader')
  }
}
