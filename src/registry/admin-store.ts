/**
 * Writes to the registry, shared by every admin front end (the CLI now, the admin
 * API later): one implementation, several front ends. Each change that touches
 * several Redis keys (a record and its index sets, plus the audit entry) is one
 * MULTI/EXEC transaction.
 */
import type { Redis } from 'ioredis'
import { generateKey } from './key-material.js'
import { parseUserRecord, INVALID } from './records.js'
import type { RedisKeys } from './redis-keys.js'

/** A failed operation the admin can fix (exit status 1, the message on stderr). */
export class AdminError extends Error {
  override readonly name = 'AdminError'
}

export interface CreatedKey {
  id: string
  key: string
  type: 'personal' | 'bot'
  org: string
  user?: string
  role?: string
  name: string
  created_at: string
  expires_at?: string
}

export interface CreateKeyInput {
  type: 'personal' | 'bot'
  user?: string
  role?: string
  org?: string
  name?: string
  expiresInMs?: number
  createdBy?: string
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$/
const PERMISSION = /^(\*|[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*(:\*)?)$/

export function isoNow (now = Date.now()): string {
  return new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

export class AdminStore {
  constructor (
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly keyPrefix: string,
    private readonly actor: string
  ) {}

  async putRole (name: string, permissions: string[], description?: string): Promise<void> {
    checkName('role', name)
    for (const p of permissions) {
      if (!PERMISSION.test(p)) throw new AdminError(`invalid permission "${p}" (expected resource:action, resource:* or *)`)
    }
    const fields: Record<string, string> = { permissions: permissions.join(' ') }
    if (description !== undefined) fields.description = description
    await this.redis.multi()
      .hset(this.keys.role(name), fields)
      .sadd(this.keys.roles, name)
      .xadd(this.keys.audit, 'MAXLEN', '~', '100000', '*', ...this.auditFields('role.put', `role:${name}`, fields))
      .exec()
  }

  async putUser (id: string, input: { org: string, role: string, name?: string, email?: string }): Promise<{ created: boolean }> {
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
    tx.xadd(this.keys.audit, 'MAXLEN', '~', '100000', '*', ...this.auditFields('user.put', `user:${id}`, fields))
    await tx.exec()
    return { created: existing.status === undefined }
  }

  async createKey (input: CreateKeyInput, now = Date.now()): Promise<CreatedKey> {
    let org: string
    if (input.type === 'personal') {
      if (input.user === undefined) throw new AdminError('a personal key needs --user')
      const user = parseUserRecord(await this.redis.hgetall(this.keys.user(input.user)))
      if (user === INVALID) throw new AdminError(`user "${input.user}" does not exist or its record is incomplete`)
      if (user.status !== 'active') throw new AdminError(`user "${input.user}" is deactivated`)
      org = user.org
    } else {
      if (input.role === undefined || input.org === undefined) throw new AdminError('a BOT key needs --role and --org')
      checkName('org', input.org)
      if (await this.redis.exists(this.keys.role(input.role)) === 0) throw new AdminError(`role "${input.role}" does not exist`)
      org = input.org
    }
    if (input.name !== undefined && input.name.length > 200) throw new AdminError('--name is longer than 200 characters')

    const generated = generateKey(this.keyPrefix)
    const createdAt = isoNow(now)
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
    if (input.expiresInMs !== undefined) record.expires_at = isoNow(now + input.expiresInMs)

    const owner = input.type === 'personal' ? input.user : input.createdBy
    const tx = this.redis.multi()
      .hset(this.keys.key(generated.id), record)
      .sadd(this.keys.orgKeys(org), generated.id)
    if (owner !== undefined) tx.sadd(this.keys.userKeys(owner), generated.id)
    const { hash: _hash, ...audited } = record
    tx.xadd(this.keys.audit, 'MAXLEN', '~', '100000', '*', ...this.auditFields('key.create', `key:${generated.id}`, audited))
    await tx.exec()

    const out: CreatedKey = { id: generated.id, key: generated.key, type: input.type, org, name: record.name as string, created_at: createdAt }
    if (record.user !== undefined) out.user = record.user
    if (record.role !== undefined) out.role = record.role
    if (record.expires_at !== undefined) out.expires_at = record.expires_at
    return out
  }

  private auditFields (action: string, target: string, detail: Record<string, string>): string[] {
    return ['time', isoNow(), 'actor', this.actor, 'action', action, 'target', target, 'result', 'ok', 'detail', JSON.stringify(detail)]
  }
}

function checkName (what: string, value: string): void {
  if (!NAME.test(value)) throw new AdminError(`invalid ${what} "${value}" (letters, digits and _.@:- ; up to 128 characters)`)
}
