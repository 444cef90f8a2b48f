/**
 * Parsing of the registry's Redis hashes into typed records, once, when they enter
 * the cache. Anything unexpected (unknown `type` or `status`, a missing field, an
 * unparsable date, an org, user or role name no admin front end would write) parses
 * to INVALID, which the decision turns into a denial. The names become identity header
 * values, so a hand-edited one of 20,000 characters or with a control character would
 * otherwise make an upstream or a proxy refuse the request (a 502). A malformed
 * `rate_limit` parses to a limit that allows nothing (src/config/rate-limit.ts).
 */
import { AddressList } from './address-list.js'
import { INVALID, type Invalid } from './invalid.js'
import { recordLimit, type RecordLimit } from '../config/rate-limit.js'
import { GRANT } from '../config/permission.js'
import { Grants } from './grants.js'
import { parseTimestamp } from './record-values.js'
import { recordMeter, type RecordMeter } from './meter-fields.js'
import { parseMeta, type Meta } from './meta.js'
import { IDENTITY_ID } from './identities.js'

export { recordMeter, type RecordMeter } from './meter-fields.js'
export { mergeMeta, META_MAX_BYTES, metaProblem, metaText, parseMeta, type Meta } from './meta.js'
export {
  EXTERNAL_ID, IDENTITY_FIELDS, IDENTITY_ID, identityRecordOf, parseIdentityRecord, type IdentityRecord
} from './identities.js'

export { Grants, NO_GRANTS, RESERVED_NAMESPACE, scopedGrants } from './grants.js'
export { flatCopy, isoTimestamp, parseTimestamp } from './record-values.js'

export { AddressList, cidrProblems } from './address-list.js'

/**
 * User ids, org names and role names, as every record holds them and every admin front
 * end writes them (the admin API's schemas take it too).
 */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$/

export { INVALID, type Invalid } from './invalid.js'

/**
 * A key record as the gateway caches it: only what a decision reads. One is held per
 * cached key (100,000 keys are a normal cache), so it is kept small: the digest is a
 * 32-character binary string rather than a Buffer, and repeated strings are shared.
 */
export interface KeyRecord {
  type: 'personal' | 'bot'
  /** the stored SHA-256 of the secret, decoded from hex once, as a latin1 string of 32 bytes */
  digest: string
  org: string
  /** personal keys: the owning user */
  user: string | undefined
  /** BOT keys: the role the key acts with */
  role: string | undefined
  status: 'active' | 'revoked'
  /** epoch ms, or undefined for keys that never expire */
  expiresAt: number | undefined
  /** the key's own `rate_limit` */
  rateLimit: RecordLimit
  /** the key's `scope` and `allowed_cidrs`; undefined (most keys): neither */
  restriction: KeyRestriction | undefined
  /** the key's `quota` and `credits` (docs/quotas.md); absent (most keys): neither */
  meter?: RecordMeter
  /** `env`: `test` for a test key (docs/test-keys.md); absent or `live`: live */
  env?: 'live' | 'test' | undefined
  /** the restriction tried on the key (`shadow_scope`, `shadow_allowed_cidrs`, docs/safe-change.md): never enforced */
  shadow?: KeyRestriction | undefined
  /** BOT keys: the identity (`keygate:identity:<id>`) whose limits and allowance the key shares */
  identity?: string
  /** the key's `meta` (docs/identities.md) */
  meta?: Meta
}

/**
 * What a key's owner narrowed it to (docs/key-scopes.md): `scope`, the permissions it may use
 * at most, and `allowed_cidrs`, the client addresses it may be used from. Parsed once
 * per text and shared by every key record that holds the same fields.
 */
export interface KeyRestriction {
  /** undefined: the key uses its role's grants whole */
  readonly scope: Grants | undefined
  /** undefined: any client address */
  readonly addresses: AddressList | undefined
}

export interface UserRecord {
  org: string
  role: string
  status: 'active' | 'deactivated'
}

export interface RoleRecord {
  permissions: readonly string[]
  grants: Grants
  /** every key acting with the role gets a bucket of its own */
  rateLimit: RecordLimit
}

/** `keygate:org:<org>`: what the gateway reads of an org record. */
export interface OrgRecord {
  /** one bucket shared by every key of the org */
  rateLimit: RecordLimit
  /** the org's `quota` and `credits`, one balance for every key of the org; absent: neither */
  meter?: RecordMeter
}

/**
 * An org without a record (most orgs): cached as a record that sets nothing, not as
 * a negative entry, so the names of orgs in use are never pushed out by the unknown
 * key ids anyone can mint (they share the negative store's bound).
 */
export const NO_ORG_RECORD: OrgRecord = Object.freeze({ rateLimit: undefined })

/** HGETALL's reply as a flat [field, value, ...] array -> object. */
export function fieldsOf (flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string
  return out
}

const SHA256_HEX = /^[0-9a-f]{64}$/

/** A field's value as read: a string, or null/undefined when the hash has no such field. */
type Field = string | null | undefined

/**
 * The fields the gateway reads of each record kind, in the order the registry read
 * returns them (registry-reader.ts reads exactly these, with HMGET): every other field
 * (name, created_at, ...) is the CLI's and the admin API's, never sent to the gateway.
 */
export const KEY_FIELDS = [
  'type', 'hash', 'org', 'status', 'user', 'role', 'expires_at', 'rate_limit', 'scope', 'allowed_cidrs',
  'quota', 'credits', 'meter', 'env', 'identity', 'meta', 'shadow_scope', 'shadow_allowed_cidrs'
] as const
export const USER_FIELDS = ['org', 'role', 'status'] as const
export const ROLE_FIELDS = ['permissions', 'rate_limit'] as const
export const ORG_FIELDS = ['rate_limit', 'quota', 'credits'] as const

/** A key record from its fields (HGETALL's object form). */
export function parseKeyRecord (f: Record<string, string>): KeyRecord | Invalid {
  return keyRecordOf(
    f.type, f.hash, f.org, f.status, f.user, f.role, f.expires_at, f.rate_limit, f.scope, f.allowed_cidrs,
    f.quota, f.credits, f.meter, f.env, f.identity, f.meta, f.shadow_scope, f.shadow_allowed_cidrs
  )
}

/** A key record from its KEY_FIELDS, in order: the one set of rules for key records. */
export function keyRecordOf (
  type: Field, hash: Field, org: Field, status: Field, user: Field, role: Field, expires: Field, rateLimit: Field,
  scope?: Field, cidrs?: Field, quota?: Field, credits?: Field, meterId?: Field, env?: Field,
  identity?: Field, metaText?: Field, shadowScope?: Field, shadowCidrs?: Field
): KeyRecord | Invalid {
  if (type !== 'personal' && type !== 'bot') return INVALID
  // (any other environment fails closed: the key is refused, never taken for a live one)
  if (env != null && env !== '' && env !== 'live' && env !== 'test') return INVALID
  if (status !== 'active' && status !== 'revoked') return INVALID
  if (hash == null || !SHA256_HEX.test(hash) || !isName(org)) return INVALID
  if (type === 'personal' && !isName(user)) return INVALID
  if (type === 'bot' && !isName(role)) return INVALID
  let expiresAt: number | undefined
  if (expires != null && expires !== '') {
    expiresAt = parseTimestamp(expires)
    if (expiresAt === undefined) return INVALID
  }
  const restriction = restrictionOf(scope, cidrs)
  if (restriction === INVALID) return INVALID
  const record: KeyRecord = {
    // the literals, not the reply's copies
    type: type === 'personal' ? 'personal' : 'bot',
    digest: Buffer.from(hash, 'hex').toString('latin1'),
    org: shared(org),
    user: type === 'personal' ? shared(user as string) : undefined,
    role: type === 'bot' ? shared(role as string) : undefined,
    status: status === 'active' ? 'active' : 'revoked',
    expiresAt,
    rateLimit: recordLimit(rateLimit ?? undefined),
    restriction,
    env: env === 'test' ? 'test' : 'live'
  }
  const meter = recordMeter(quota, credits, meterId)
  if (meter !== undefined) record.meter = meter
  // an identity only a BOT key may name, and one an admin front end would write
  if (identity != null && identity !== '') {
    if (type !== 'bot' || !IDENTITY_ID.test(identity)) return INVALID
    record.identity = shared(identity)
  }
  const meta = parseMeta(metaText)
  if (meta === INVALID) return INVALID
  if (meta !== undefined) record.meta = meta
  // (a shadow restriction only counts: one no admin front end would write is not tried, and refuses nothing)
  const shadow = restrictionOf(shadowScope, shadowCidrs)
  if (shadow !== undefined && shadow !== INVALID) record.shadow = shadow
  return record
}

/**
 * A key's `scope` and `allowed_cidrs` -> its restriction; undefined when it has
 * neither (an empty field is none). A permission outside the grammar or an address
 * that is not one makes the whole record INVALID: a key its owner narrowed is never
 * served wider than that. Shared by the fields' text: keys restricted alike share one.
 */
export function restrictionOf (scope: Field, cidrs: Field): KeyRestriction | Invalid | undefined {
  if ((scope == null || scope === '') && (cidrs == null || cidrs === '')) return undefined
  const text = `${(scope ?? '').length}:${scope ?? ''}${cidrs ?? ''}`
  const known = restrictions.get(text)
  if (known !== undefined) return known
  const permissions = splitList(scope)
  if (permissions.some((p) => !GRANT.test(p))) return INVALID
  const addresses = cidrs == null || cidrs === '' ? undefined : AddressList.parse(splitList(cidrs))
  if (addresses === INVALID) return INVALID
  const restriction: KeyRestriction = Object.freeze({
    scope: scope == null || scope === '' ? undefined : new Grants(permissions),
    addresses
  })
  if (restrictions.size >= RESTRICTIONS_SHARED) restrictions.clear()
  restrictions.set(text, restriction)
  return restriction
}

const restrictions = new Map<string, KeyRestriction>()
const RESTRICTIONS_SHARED = 1000

function splitList (text: Field): string[] {
  return (text ?? '').split(/\s+/).filter((p) => p !== '')
}

/** A user record from its fields (HGETALL's object form). */
export function parseUserRecord (f: Record<string, string>): UserRecord | Invalid {
  return userRecordOf(f.org, f.role, f.status)
}

/** A user record from its USER_FIELDS, in order. */
export function userRecordOf (org: Field, role: Field, status: Field): UserRecord | Invalid {
  if (status !== 'active' && status !== 'deactivated') return INVALID
  if (!isName(org) || !isName(role)) return INVALID
  return { org: shared(org), role: shared(role), status: status === 'active' ? 'active' : 'deactivated' }
}

/** An org, user or role name as every admin front end writes one (src/admin/policy/names.ts). */
function isName (value: Field): value is string {
  return value != null && NAME.test(value)
}

/**
 * One copy of each org, user and role name held by cached records: many keys name the
 * same user and org. Bounded; when full it starts over (only sharing is lost).
 */
const names = new Map<string, string>()
const NAMES_SHARED = 10_000

function shared (name: string): string {
  const known = names.get(name)
  if (known !== undefined) return known
  if (names.size >= NAMES_SHARED) names.clear()
  names.set(name, name)
  return name
}

/** A role record from its fields (HGETALL's object form). */
export function parseRoleRecord (f: Record<string, string>): RoleRecord {
  return roleRecordOf(f.permissions, f.rate_limit)
}

/**
 * A role record from its ROLE_FIELDS, in order. Every miss reads its key's role again,
 * so the last records parsed are kept by their fields' text and shared (records are
 * never modified): a miss of a key whose role is unchanged builds no Grants.
 */
export function roleRecordOf (permissions: Field, rateLimit: Field): RoleRecord {
  // (length-prefixed: no two pairs of fields make the same text)
  const text = `${(permissions ?? '').length}:${permissions ?? ''}${rateLimit ?? ''}`
  const known = roles.get(text)
  if (known !== undefined) return known
  const list = (permissions ?? '').split(/\s+/).filter((p) => p !== '')
  const role = { permissions: list, grants: new Grants(list), rateLimit: recordLimit(rateLimit ?? undefined) }
  if (roles.size >= ROLES_SHARED) roles.clear()
  roles.set(text, role)
  return role
}

const roles = new Map<string, RoleRecord>()
const ROLES_SHARED = 1000

/** An org record from its fields (HGETALL's object form). */
export function parseOrgRecord (f: Record<string, string>): OrgRecord {
  return orgRecordOf(f.rate_limit, f.quota, f.credits)
}

/** An org record from its ORG_FIELDS: NO_ORG_RECORD when it sets nothing. */
export function orgRecordOf (rateLimit: Field, quota?: Field, credits?: Field): OrgRecord {
  const limit = recordLimit(rateLimit ?? undefined)
  const meter = recordMeter(quota, credits)
  if (meter === undefined) return limit === undefined ? NO_ORG_RECORD : { rateLimit: limit }
  return { rateLimit: limit, meter }
}
