/**
 * Writes to and admin reads of the registry, shared by every admin front end (the
 * CLI and the admin API): one implementation, several front ends. Who may do what
 * is decided before a call reaches the store, by admin-rules.ts.
 *
 * Each change that touches several Redis keys (a record, its index sets and the
 * audit entry) is one MULTI/EXEC transaction. Every change is audited, and every
 * refused attempt is counted in the audit trail's refusal aggregates (result
 * `error: <message>`; audit-log.ts). Listing uses the index sets, never KEYS or
 * SCAN. Nothing here returns a secret or a hash.
 */
import type { ChainableCommander } from 'ioredis'
import { AuditLog, DEFAULT_AUDIT_OPTIONS, type AuditEntry, type AuditOptions, type AuditPage, type AuditQuery, type RefusalAggregate } from './audit-log.js'
import { isTypedActor, ownerOf, readCreatedBy } from './actors.js'
import { generateKey } from './key-material.js'
import { isoTimestamp, parseTimestamp, parseUserRecord, INVALID } from './records.js'
import { duplicateClient, type RegistryClient } from './redis-client.js'
import type { RedisKeys } from './redis-keys.js'

/**
 * A failed operation (CLI: exit status 1, the message on stderr). `kind` says what
 * went wrong, for front ends that map it (the admin API: 400, 403, 404, 409). Messages
 * name no front end's syntax (no CLI flags, no JSON fields): every front end shows them.
 */
export class AdminError extends Error {
  override readonly name = 'AdminError'
  /** `needs`: for `forbidden`, the permission that would allow it (a 403's challenge scope) */
  constructor (message: string, readonly kind: AdminErrorKind = 'invalid', readonly needs?: string) {
    super(message)
  }
}

/**
 * `invalid`: bad input; `forbidden`: the caller's scope does not allow it; `not_found`:
 * an addressed record does not exist, or is outside the caller's scope; `conflict`:
 * refused in the registry's current state
 */
export type AdminErrorKind = 'invalid' | 'forbidden' | 'not_found' | 'conflict'

export type KeyType = 'personal' | 'bot'

export interface CreatedKey {
  id: string
  key: string
  type: KeyType
  org: string
  user?: string
  role?: string
  name: string
  created_at: string
  expires_at?: string
}

export interface RotatedKey extends CreatedKey {
  replaces: string
  replaces_expires_at: string
}

/** A key as admins see it: never the secret, never its hash. */
export interface KeyView {
  id: string
  type: string
  org: string
  user?: string
  role?: string
  name: string
  /** `active`, `revoked`, or `expired` (an active record past its expires_at) */
  status: string
  created_at?: string
  created_by?: string
  expires_at?: string
  revoked_at?: string
  last_used_at?: string
  replaces?: string
  replaced_by?: string
}

export interface UserView {
  id: string
  org?: string
  role?: string
  status?: string
  name?: string
  email?: string
}

export interface RoleView {
  name: string
  permissions: string[]
  description?: string
}

export type { AuditEntry, AuditPage, AuditQuery, RefusalAggregate } from './audit-log.js'

export interface CreateKeyInput {
  type: KeyType
  user?: string
  role?: string
  org?: string
  name?: string
  expiresInMs?: number
  /** a typed actor (actors.ts); default: the store's actor */
  createdBy?: string
}

export interface UserStatusChange {
  changed: boolean
  /** the user's BOT keys (created by them) that are active, after the change */
  createdKeys: string[]
  /** the ones this change revoked */
  revokedKeys: string[]
}

/** user ids, org names, role names (also the admin API's schemas) */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$/
/** `resource:action`, `resource:*` or `*` (also the admin API's schemas) */
export const PERMISSION = /^(\*|[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*(:\*)?)$/
/** how long a rotated key keeps working by default (`keys rotate`, POST /keys/:id/rotate) */
export const DEFAULT_GRACE_MS = 24 * 3_600_000

/** The keys a user owns: their personal keys, and the BOT keys they created (`created_by` = `user:<id>`). */
export function ownsKey (user: string, key: { type: string, user?: string | undefined, created_by?: string | undefined }): boolean {
  return key.user === user || (key.type === 'bot' && ownerOf(key.created_by) === user)
}
const KEY_FIELDS_SHOWN = ['type', 'org', 'user', 'role', 'name', 'status', 'created_at', 'created_by', 'expires_at', 'revoked_at', 'replaces', 'replaced_by'] as const

export class AdminStore {
  private readonly audit: AuditLog

  constructor (
    private readonly redis: RegistryClient,
    private readonly keys: RedisKeys,
    private readonly keyPrefix: string,
    private readonly actor: string,
    auditOptions: AuditOptions = DEFAULT_AUDIT_OPTIONS
  ) {
    this.audit = new AuditLog(redis, keys, keyPrefix, actor, auditOptions)
  }

  // ---- roles ---------------------------------------------------------------

  async putRole (name: string, permissions: string[], description?: string): Promise<void> {
    await this.audited('role.put', `role:${name}`, async () => {
      checkName('role', name)
      for (const p of permissions) {
        if (!PERMISSION.test(p)) throw new AdminError(`invalid permission "${p}" (expected resource:action, resource:* or *)`)
      }
      const fields: Record<string, string> = { permissions: permissions.join(' ') }
      if (description !== undefined) fields.description = description
      await commit(this.redis.multi()
        .hset(this.keys.role(name), fields)
        .sadd(this.keys.roles, name)
        .xadd(...this.auditArgs('role.put', `role:${name}`, 'ok', fields)))
    })
  }

  async listRoles (): Promise<RoleView[]> {
    const names = (await this.redis.smembers(this.keys.roles)).sort()
    const records = await this.hgetallMany(names.map((n) => this.keys.role(n)))
    return names.flatMap((name, i) => {
      const r = records[i]
      if (r === undefined || Object.keys(r).length === 0) return []
      return [roleView(name, r)]
    })
  }

  async showRole (name: string): Promise<RoleView> {
    const r = await this.redis.hgetall(this.keys.role(name))
    if (Object.keys(r).length === 0) throw new AdminError(`role "${name}" does not exist`, 'not_found')
    return roleView(name, r)
  }

  /** Refuses while users or BOT keys reference the role, naming them, unless `force`. */
  async deleteRole (name: string, force: boolean): Promise<{ users: string[], keys: string[] }> {
    return await this.audited('role.delete', `role:${name}`, async () => {
      if (await this.redis.exists(this.keys.role(name)) === 0) throw new AdminError(`role "${name}" does not exist`, 'not_found')
      const users = (await this.listUsers()).filter((u) => u.role === name).map((u) => u.id)
      const keys = (await this.listKeys()).filter((k) => k.type === 'bot' && k.role === name && k.status === 'active').map((k) => k.id)
      if ((users.length > 0 || keys.length > 0) && !force) {
        throw new AdminError(`role "${name}" is still used by ${describeRefs(users, keys)}; reassign them, or force the deletion (they will then have no permissions)`, 'conflict')
      }
      await commit(this.redis.multi()
        .del(this.keys.role(name))
        .srem(this.keys.roles, name)
        .xadd(...this.auditArgs('role.delete', `role:${name}`, 'ok', { force: String(force), users: users.join(' '), keys: keys.join(' ') })))
      return { users, keys }
    })
  }

  // ---- users ---------------------------------------------------------------

  async putUser (id: string, input: { org: string, role: string, name?: string, email?: string }): Promise<{ created: boolean }> {
    return await this.audited('user.put', `user:${id}`, async () => {
      checkName('user id', id)
      checkName('org', input.org)
      checkName('role', input.role)
      const existing = await this.redis.hgetall(this.keys.user(id))
      const fields: Record<string, string> = { org: input.org, role: input.role }
      if (existing.status === undefined) fields.status = 'active'
      if (input.name !== undefined) fields.name = input.name
      if (input.email !== undefined) fields.email = input.email
      const tx = this.redis.multi().hset(this.keys.user(id), fields).sadd(this.keys.users, id).sadd(this.keys.orgUsers(input.org), id)
      if (existing.org !== undefined && existing.org !== input.org) tx.srem(this.keys.orgUsers(existing.org), id)
      tx.xadd(...this.auditArgs('user.put', `user:${id}`, 'ok', fields, input.org))
      await commit(tx)
      return { created: existing.status === undefined }
    })
  }

  /**
   * Deactivating stops every personal key of the user at once; the key records are
   * untouched. The BOT keys the user created are independent of the user: they are
   * reported, and revoked in the same transaction only when `revokeCreatedKeys` asks
   * (`inOrg`: only those in that org, the ones an org admin may see).
   */
  async setUserStatus (id: string, status: 'active' | 'deactivated', o: { revokeCreatedKeys?: boolean, inOrg?: string } = {}, now = Date.now()): Promise<UserStatusChange> {
    const action = status === 'active' ? 'user.activate' : 'user.deactivate'
    return await this.audited(action, `user:${id}`, async () => {
      const [current, org] = await this.redis.hmget(this.keys.user(id), 'status', 'org')
      if (current === null || current === undefined) throw new AdminError(`user "${id}" does not exist`, 'not_found')
      const created = (await this.listKeys({ user: id, org: o.inOrg }, now))
        .filter((k) => k.type === 'bot' && k.status === 'active')
        .map((k) => k.id)
      const revokedKeys = o.revokeCreatedKeys === true ? created : []
      const tx = this.redis.multi().hset(this.keys.user(id), 'status', status)
      for (const keyId of revokedKeys) tx.hset(this.keys.key(keyId), { status: 'revoked', revoked_at: isoTimestamp(now) })
      const detail: Record<string, string> = { from: current, to: status }
      if (revokedKeys.length > 0) detail.revoked_keys = revokedKeys.join(' ')
      tx.xadd(...this.auditArgs(action, `user:${id}`, 'ok', detail, org ?? undefined))
      await commit(tx)
      return { changed: current !== status, createdKeys: created.filter((k) => !revokedKeys.includes(k)), revokedKeys }
    })
  }

  async listUsers (filter: { org?: string } = {}): Promise<UserView[]> {
    const ids = (await this.redis.smembers(filter.org === undefined ? this.keys.users : this.keys.orgUsers(filter.org))).sort()
    const records = await this.hgetallMany(ids.map((id) => this.keys.user(id)))
    return ids.flatMap((id, i) => {
      const r = records[i]
      if (r === undefined || Object.keys(r).length === 0) return []
      if (filter.org !== undefined && r.org !== filter.org) return []
      return [{ id, org: r.org, role: r.role, status: r.status, name: r.name, email: r.email }]
    })
  }

  async showUser (id: string): Promise<UserView> {
    const r = await this.redis.hgetall(this.keys.user(id))
    if (Object.keys(r).length === 0) throw new AdminError(`user "${id}" does not exist`, 'not_found')
    return { id, org: r.org, role: r.role, status: r.status, name: r.name, email: r.email }
  }

  // ---- keys ----------------------------------------------------------------

  async createKey (input: CreateKeyInput, now = Date.now()): Promise<CreatedKey> {
    const target = input.type === 'personal' ? `user:${input.user ?? ''}` : `role:${input.role ?? ''}`
    return await this.audited('key.create', target, async () => {
      const org = await this.validateOwner(input)
      if (input.name !== undefined && input.name.length > 200) throw new AdminError('the key name is longer than 200 characters')
      if (input.createdBy !== undefined && !isTypedActor(input.createdBy)) throw new AdminError(`invalid creator "${input.createdBy}" (expected user:<id>, key:<id>, cli:<name> or admin-token)`)
      const { created, record } = this.newKey(input, org, now)
      const tx = this.redis.multi()
      this.addKey(tx, created.id, record, input.type === 'personal' ? input.user : ownerOf(record.created_by))
      tx.xadd(...this.auditArgs('key.create', `key:${created.id}`, 'ok', withoutHash(record), org))
      await commit(tx)
      return created
    })
  }

  /**
   * A new key with the same type, owner, role, org and name; the old one keeps working
   * until now + grace (or its own earlier expiry), then only the new one does.
   * `botMaxTtlMs`: a new BOT key expires within this (a self-service rotation).
   */
  async rotateKey (id: string, graceMs: number, o: { botMaxTtlMs?: number } = {}, now = Date.now()): Promise<RotatedKey> {
    return await this.audited('key.rotate', `key:${id}`, async () => {
      // WATCH: a revoke (or any edit) of the old key between this read and the write
      // aborts the rotation instead of minting a replacement for a revoked key. WATCH
      // belongs to a connection, and the shared one carries other callers' MULTI/EXEC
      // (an EXEC clears every WATCH, and would itself be aborted by ours), so the
      // rotation runs on a connection of its own.
      const conn = duplicateClient(this.redis, { connectionName: 'keygate-rotate', lazyConnect: true, enableReadyCheck: false, retryStrategy: () => null })
      conn.on('error', () => {}) // reported through the failed command
      try {
        // (connected first: the gateway's clients queue nothing while disconnected)
        await conn.connect()
        await conn.watch(this.keys.key(id))
        return await this.rotateWatched(conn, id, graceMs, o.botMaxTtlMs, now)
      } finally {
        conn.disconnect()
      }
    })
  }

  private async rotateWatched (conn: RegistryClient, id: string, graceMs: number, botMaxTtlMs: number | undefined, now: number): Promise<RotatedKey> {
    const old = await conn.hgetall(this.keys.key(id))
    if (old.type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
    if (old.status !== 'active') throw new AdminError(`key "${id}" is ${old.status ?? 'in an unknown state'}; only an active key can be rotated`, 'conflict')
    const oldExpiry = old.expires_at === undefined ? undefined : parseTimestamp(old.expires_at)
    if (oldExpiry !== undefined && oldExpiry <= now) throw new AdminError(`key "${id}" has expired; create a new key instead`, 'conflict')
    if (old.type !== 'personal' && old.type !== 'bot') throw new AdminError(`key "${id}" has an unknown type "${old.type}"`, 'conflict')
    const input: CreateKeyInput = { type: old.type, user: old.user, role: old.role, org: old.org, name: old.name, createdBy: readCreatedBy(old.created_by) }
    const org = await this.validateOwner(input)
    // the new key keeps the old one's expiry, if it had one
    if (oldExpiry !== undefined) input.expiresInMs = oldExpiry - now
    if (botMaxTtlMs !== undefined && old.type === 'bot') input.expiresInMs = Math.min(input.expiresInMs ?? botMaxTtlMs, botMaxTtlMs)
    const { created, record } = this.newKey(input, org, now)
    record.replaces = id
    const graceEnd = Math.min(now + graceMs, oldExpiry ?? Number.POSITIVE_INFINITY)
    const replacesExpiresAt = isoTimestamp(graceEnd)
    const tx = conn.multi()
    this.addKey(tx, created.id, record, old.type === 'personal' ? old.user : ownerOf(record.created_by))
    tx.hset(this.keys.key(id), { expires_at: replacesExpiresAt, replaced_by: created.id })
    tx.xadd(...this.auditArgs('key.rotate', `key:${id}`, 'ok', { new_key: created.id, replaces_expires_at: replacesExpiresAt }, org))
    await commit(tx, `key "${id}" changed during the rotation; nothing was written, try again`)
    return { ...created, replaces: id, replaces_expires_at: replacesExpiresAt }
  }

  async revokeKey (id: string, now = Date.now()): Promise<{ changed: boolean }> {
    return await this.audited('key.revoke', `key:${id}`, async () => {
      const [status, org] = await this.redis.hmget(this.keys.key(id), 'status', 'org')
      if (status === null || status === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
      if (status === 'revoked') return { changed: false }
      await commit(this.redis.multi()
        .hset(this.keys.key(id), { status: 'revoked', revoked_at: isoTimestamp(now) })
        .xadd(...this.auditArgs('key.revoke', `key:${id}`, 'ok', { from: status }, org ?? undefined)))
      return { changed: true }
    })
  }

  async showKey (id: string, now = Date.now()): Promise<KeyView> {
    const [view] = await this.keyViews([id], now)
    if (view === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
    return view
  }

  /** Keys by user, by org, or all; `unusedForMs`: not used (nor created) within that long. */
  async listKeys (filter: { user?: string, org?: string, unusedForMs?: number } = {}, now = Date.now()): Promise<KeyView[]> {
    const set = filter.user !== undefined ? this.keys.userKeys(filter.user) : filter.org !== undefined ? this.keys.orgKeys(filter.org) : this.keys.keys
    let views = await this.keyViews((await this.redis.smembers(set)).sort(), now)
    if (filter.user !== undefined) views = views.filter((k) => ownsKey(filter.user as string, k))
    if (filter.org !== undefined) views = views.filter((k) => k.org === filter.org)
    if (filter.unusedForMs !== undefined) {
      const cutoff = now - filter.unusedForMs
      views = views.filter((k) => {
        const seen = parseTimestamp(k.last_used_at ?? '') ?? parseTimestamp(k.created_at ?? '') ?? 0
        return seen < cutoff
      })
    }
    return views
  }

  /**
   * Rewrites every untyped `created_by` (a user id, from before values were typed) as
   * `user:<id>`, and drops BOT keys from the index set of an "owner" that is really an
   * actor (`cli:*`, `key:*`, `admin-token`). Idempotent; each key is its own small
   * transaction, so it can run while the gateway serves.
   */
  async migrateCreatedBy (): Promise<{ rewritten: string[], unindexed: string[] }> {
    const ids = (await this.redis.smembers(this.keys.keys)).sort()
    const rewritten: string[] = []
    const unindexed: string[] = []
    for (const id of ids) {
      const [type, stored] = await this.redis.hmget(this.keys.key(id), 'type', 'created_by')
      if (stored === null || stored === undefined || stored === '') continue
      const typed = readCreatedBy(stored) as string
      const tx = this.redis.multi()
      let changes = 0
      if (typed !== stored) {
        tx.hset(this.keys.key(id), 'created_by', typed)
        rewritten.push(id)
        changes++
      } else if (type === 'bot' && ownerOf(typed) === undefined && await this.redis.sismember(this.keys.userKeys(stored), id) === 1) {
        tx.srem(this.keys.userKeys(stored), id)
        unindexed.push(id)
        changes++
      }
      if (changes === 0) continue
      tx.xadd(...this.auditArgs('key.migrate', `key:${id}`, 'ok', { created_by: typed }))
      await commit(tx)
    }
    return { rewritten, unindexed }
  }

  // ---- audit ---------------------------------------------------------------

  /** Every change in range, oldest first (`keygate audit`). */
  async readAudit (sinceMs?: number, now = Date.now()): Promise<AuditEntry[]> {
    return await this.audit.readAll(sinceMs, now)
  }

  /** One page of changes, newest first (GET /audit). */
  async pageAudit (q: AuditQuery, now = Date.now()): Promise<AuditPage<AuditEntry>> {
    return await this.audit.page(q, now)
  }

  /** One page of refused attempts, aggregated per minute, newest first (GET /audit/refusals). */
  async readRefusals (q: AuditQuery, now = Date.now()): Promise<AuditPage<RefusalAggregate>> {
    return await this.audit.refusals(q, now)
  }

  /**
   * Counts an attempt a front end refused before it reached the store (the admin API's
   * permission checks, e.g. a BOT key with a role broader than its creator's) in the
   * refusal aggregates: result `denied: <why>`. `org`: the org of the object concerned,
   * when it comes from the registry or the caller's own (never from the request).
   */
  async recordDenied (action: string, target: string, why: string, org?: string): Promise<void> {
    await this.audit.refused(action, target, `denied: ${why}`, org)
  }

  // ---- internals -----------------------------------------------------------

  private async validateOwner (input: CreateKeyInput): Promise<string> {
    if (input.type === 'personal') {
      if (input.user === undefined) throw new AdminError('a personal key needs a user')
      const fields = await this.redis.hgetall(this.keys.user(input.user))
      if (Object.keys(fields).length === 0) throw new AdminError(`user "${input.user}" does not exist`, 'not_found')
      const user = parseUserRecord(fields)
      if (user === INVALID) throw new AdminError(`user "${input.user}" has an incomplete record`, 'conflict')
      if (user.status !== 'active') throw new AdminError(`user "${input.user}" is deactivated`, 'conflict')
      return user.org
    }
    if (input.role === undefined || input.org === undefined) throw new AdminError('a BOT key needs a role and an org')
    checkName('org', input.org)
    if (await this.redis.exists(this.keys.role(input.role)) === 0) throw new AdminError(`role "${input.role}" does not exist`, 'not_found')
    return input.org
  }

  private newKey (input: CreateKeyInput, org: string, now: number): { created: CreatedKey, record: Record<string, string> } {
    const generated = generateKey(this.keyPrefix)
    const createdAt = isoTimestamp(now)
    const record: Record<string, string> = {
      type: input.type,
      hash: generated.hash,
      org,
      name: input.name ?? '',
      status: 'active',
      created_at: createdAt,
      created_by: input.createdBy ?? this.actor
    }
    if (input.type === 'personal') record.user = input.user as string
    else record.role = input.role as string
    if (input.expiresInMs !== undefined) record.expires_at = isoTimestamp(now + input.expiresInMs)
    const created: CreatedKey = { id: generated.id, key: generated.key, type: input.type, org, name: record.name as string, created_at: createdAt }
    if (record.user !== undefined) created.user = record.user
    if (record.role !== undefined) created.role = record.role
    if (record.expires_at !== undefined) created.expires_at = record.expires_at
    return { created, record }
  }

  private addKey (tx: ChainableCommander, id: string, record: Record<string, string>, owner: string | undefined): void {
    tx.hset(this.keys.key(id), record).sadd(this.keys.keys, id).sadd(this.keys.orgKeys(record.org as string), id)
    if (owner !== undefined) tx.sadd(this.keys.userKeys(owner), id)
  }

  private async keyViews (ids: string[], now: number): Promise<KeyView[]> {
    if (ids.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const id of ids) pipeline.hmget(this.keys.key(id), ...KEY_FIELDS_SHOWN)
    pipeline.hmget(this.keys.usage, ...ids)
    const replies = await pipeline.exec() ?? []
    const usage = (replies[ids.length]?.[1] ?? []) as Array<string | null>
    return ids.flatMap((id, i) => {
      const values = (replies[i]?.[1] ?? []) as Array<string | null>
      if (values[0] === null || values[0] === undefined) return []
      const view: Record<string, string> = { id }
      KEY_FIELDS_SHOWN.forEach((field, j) => {
        const v = values[j]
        if (v !== null && v !== undefined && v !== '') view[field] = v
      })
      if (view.name === undefined) view.name = ''
      const createdBy = readCreatedBy(view.created_by)
      if (createdBy !== undefined) view.created_by = createdBy
      const expiry = parseTimestamp(view.expires_at ?? '')
      if (view.status === 'active' && expiry !== undefined && expiry <= now) view.status = 'expired'
      const lastUsed = usage[i]
      if (lastUsed !== null && lastUsed !== undefined) view.last_used_at = lastUsed
      return [view as unknown as KeyView]
    })
  }

  private async hgetallMany (keys: string[]): Promise<Array<Record<string, string>>> {
    if (keys.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const k of keys) pipeline.hgetall(k)
    const replies = await pipeline.exec() ?? []
    return replies.map(([, value]) => (value ?? {}) as Record<string, string>)
  }

  /** Runs one admin operation; a refused one is counted in the refusal aggregates with its message, then rethrown. */
  private async audited<T> (action: string, target: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err: unknown) {
      if (err instanceof AdminError) {
        await this.audit.refused(action, target, `error: ${err.message}`).catch(() => {})
      }
      throw err
    }
  }

  /** The XADD of a change's audit entry, for the change's own transaction; `org`: the object's org, if it has one. */
  private auditArgs (action: string, target: string, result: string, detail: Record<string, string>, org?: string): ReturnType<AuditLog['changeArgs']> {
    return this.audit.changeArgs(action, target, result, detail, org)
  }
}

function roleView (name: string, r: Record<string, string>): RoleView {
  const view: RoleView = { name, permissions: (r.permissions ?? '').split(/\s+/).filter((p) => p !== '') }
  if (r.description !== undefined) view.description = r.description
  return view
}

function withoutHash (record: Record<string, string>): Record<string, string> {
  const { hash: _hash, ...rest } = record
  return rest
}

function describeRefs (users: string[], keys: string[]): string {
  const parts: string[] = []
  if (users.length > 0) parts.push(`users ${users.join(', ')}`)
  if (keys.length > 0) parts.push(`BOT keys ${keys.join(', ')}`)
  return parts.join(' and ')
}

function checkName (what: string, value: string): void {
  if (!NAME.test(value)) throw new AdminError(`invalid ${what} "${value}" (letters, digits and _.@:- ; up to 128 characters)`)
}

/**
 * EXEC, checked: `null` (a WATCHed key changed: nothing was written) is a conflict, and
 * a command that failed inside the transaction (say WRONGTYPE on a hand-edited key) is
 * an error, never a silent partial success.
 */
async function commit (tx: ChainableCommander, conflict = 'the registry changed during this operation; nothing was written, try again'): Promise<void> {
  const replies = await tx.exec()
  if (replies === null) throw new AdminError(conflict, 'conflict')
  for (const [err] of replies) if (err !== null) throw err
}
