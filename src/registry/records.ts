/**
 * Parsing of the registry's Redis hashes into typed records, once, when they enter
 * the cache. Anything unexpected (unknown `type` or `status`, a missing field, an
 * unparsable date) parses to INVALID, which the decision turns into a denial.
 */
export const INVALID = 'invalid' as const
export type Invalid = typeof INVALID

export interface KeyRecord {
  type: 'personal' | 'bot'
  /** the stored SHA-256 of the secret, decoded from hex once */
  digest: Buffer
  org: string
  /** personal keys: the owning user */
  user: string | undefined
  /** BOT keys: the role the key acts with */
  role: string | undefined
  name: string
  status: 'active' | 'revoked'
  /** epoch ms, or undefined for keys that never expire */
  expiresAt: number | undefined
}

export interface UserRecord {
  org: string
  role: string
  status: 'active' | 'deactivated'
}

export interface RoleRecord {
  permissions: readonly string[]
  grants: Grants
}

/** Granted permissions: `*` covers everything, `users:*` every `users:` action. */
export class Grants {
  readonly all: boolean
  private readonly exact: Set<string>
  private readonly prefixes: string[]

  constructor (permissions: readonly string[]) {
    this.all = permissions.includes('*')
    this.exact = new Set(permissions.filter((p) => !p.endsWith('*')))
    this.prefixes = permissions.filter((p) => p.endsWith(':*')).map((p) => p.slice(0, -1))
  }

  has (permission: string): boolean {
    if (this.all || this.exact.has(permission)) return true
    for (const prefix of this.prefixes) if (permission.startsWith(prefix)) return true
    return false
  }

  hasAll (permissions: readonly string[]): boolean {
    for (const p of permissions) if (!this.has(p)) return false
    return true
  }
}

export const NO_GRANTS = new Grants([])

/** HGETALL's reply as a flat [field, value, ...] array -> object. */
export function fieldsOf (flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string
  return out
}

const SHA256_HEX = /^[0-9a-f]{64}$/

export function parseKeyRecord (f: Record<string, string>): KeyRecord | Invalid {
  const { type, hash, org, status } = f
  if (type !== 'personal' && type !== 'bot') return INVALID
  if (status !== 'active' && status !== 'revoked') return INVALID
  if (hash === undefined || !SHA256_HEX.test(hash) || org === undefined || org === '') return INVALID
  if (type === 'personal' && (f.user === undefined || f.user === '')) return INVALID
  if (type === 'bot' && (f.role === undefined || f.role === '')) return INVALID
  let expiresAt: number | undefined
  if (f.expires_at !== undefined && f.expires_at !== '') {
    expiresAt = parseTimestamp(f.expires_at)
    if (expiresAt === undefined) return INVALID
  }
  return {
    type,
    digest: Buffer.from(hash, 'hex'),
    org,
    user: type === 'personal' ? f.user : undefined,
    role: type === 'bot' ? f.role : undefined,
    name: f.name ?? '',
    status,
    expiresAt
  }
}

export function parseUserRecord (f: Record<string, string>): UserRecord | Invalid {
  const { org, role, status } = f
  if (status !== 'active' && status !== 'deactivated') return INVALID
  if (org === undefined || org === '' || role === undefined || role === '') return INVALID
  return { org, role, status }
}

export function parseRoleRecord (f: Record<string, string>): RoleRecord {
  const permissions = (f.permissions ?? '').split(/\s+/).filter((p) => p !== '')
  return { permissions, grants: new Grants(permissions) }
}

/** epoch ms -> the registry's timestamp form, `2027-01-31T00:00:00Z` (UTC, whole seconds). */
export function isoTimestamp (ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/

/** ISO 8601 with a time and a zone (`2027-01-31T00:00:00Z`) -> epoch ms. */
export function parseTimestamp (text: string): number | undefined {
  if (!ISO_8601.test(text)) return undefined
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? undefined : ms
}
