/**
 * What the registry shows admins, defined once (TypeBox): the store returns these
 * types, and the admin API serialises its responses with their schemas (`*Schema`). Every object
 * is closed (`additionalProperties: false`): a response can only ever carry the fields
 * listed here, never a hash. The secret appears in CreatedKey and RotatedKey only.
 */
import { Type, type Static } from '@sinclair/typebox'

const closed = { additionalProperties: false } as const
const Str = Type.String()
const OptStr = Type.Optional(Str)

export type KeyType = 'personal' | 'bot'

/** A key as admins see it: never the secret, never its hash. */
export const KeyViewSchema = Type.Object({
  id: Str,
  type: Str,
  org: Str,
  user: OptStr,
  role: OptStr,
  name: Str,
  /** `active`, `revoked`, or `expired` (an active record past its expires_at) */
  status: Str,
  created_at: OptStr,
  created_by: OptStr,
  /** `user:<id>`: the person at the root of the key's chain of creators (a key made by a key) */
  owner: OptStr,
  expires_at: OptStr,
  revoked_at: OptStr,
  /** `leaked`: revoked on a scanner's report (docs/leaks.md), found at `leak_source` */
  revoked_reason: OptStr,
  leak_source: OptStr,
  /** an imported key (docs/imports.md): `key` (from the plaintext) or `sha256` */
  imported: OptStr,
  /** `test` for a test key (docs/test-keys.md); absent: live */
  env: OptStr,
  last_used_at: OptStr,
  replaces: OptStr,
  replaced_by: OptStr,
  /** the key's own limit, `<count>/<period>` (without one, its role's, its org's and the default apply) */
  rate_limit: OptStr,
  /** requests the key's own limit counts in its window now */
  rate_limit_used: Type.Optional(Type.Integer()),
  /** the key's allowance (docs/quotas.md): `<count>/<day|week|month>`, the credits granted in all */
  quota: OptStr,
  credits: OptStr,
  /** after a rotation: the key whose count of the allowance this key continues */
  meter: OptStr,
  /** the permissions the key is narrowed to (within its role's); none: the role's whole */
  scope: Type.Optional(Type.Array(Str)),
  /** the client addresses (CIDRs) the key may be used from; none: any */
  allowed_cidrs: Type.Optional(Type.Array(Str)),
  /**
   * the shadow restriction (docs/safe-change.md): since when it is tried, the scope and addresses the key would
   * have, and (one key shown) how many requests it would have refused and the last of them
   */
  shadow_since: OptStr,
  shadow_scope: Type.Optional(Type.Array(Str)),
  shadow_allowed_cidrs: Type.Optional(Type.Array(Str)),
  shadow_refused: Type.Optional(Type.Integer()),
  shadow_recent: Type.Optional(Type.Array(Type.Object({ method: Str, path: Str, reason: Str, at: Str }, closed))),
  /** a BOT key's identity (docs/identities.md) */
  identity: OptStr,
  /** (one key shown) the key's own `meta`, a JSON object; the upstream gets it over its identity's */
  meta: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
}, closed)
export type KeyView = Static<typeof KeyViewSchema>

const createdKeyFields = {
  id: Str,
  /** the key itself: in these two views only, once */
  key: Str,
  type: Str,
  org: Str,
  user: OptStr,
  role: OptStr,
  name: Str,
  created_at: Str,
  /** `test` for a test key (docs/test-keys.md); absent: live */
  env: OptStr,
  expires_at: OptStr,
  rate_limit: OptStr,
  quota: OptStr,
  credits: Type.Optional(Type.Integer()),
  scope: Type.Optional(Type.Array(Str)),
  allowed_cidrs: Type.Optional(Type.Array(Str)),
  identity: OptStr
}
export const CreatedKeySchema = Type.Object(createdKeyFields, closed)
export type CreatedKey = Static<typeof CreatedKeySchema>

/** A rotation's new key, with the key it replaces and when that one stops working. */
export const RotatedKeySchema = Type.Object({ ...createdKeyFields, replaces: Str, replaces_expires_at: Str }, closed)
export type RotatedKey = Static<typeof RotatedKeySchema>

export const UserViewSchema = Type.Object(
  { id: Str, org: OptStr, role: OptStr, status: OptStr, name: OptStr, email: OptStr },
  closed
)
export type UserView = Static<typeof UserViewSchema>

/** `rate_limit`: every key acting with the role gets a bucket of its own */
export const RoleViewSchema = Type.Object(
  { name: Str, permissions: Type.Array(Str), description: OptStr, rate_limit: OptStr },
  closed
)
export type RoleView = Static<typeof RoleViewSchema>

/**
 * An org record (`keygate:org:<org>`): its limit is one bucket shared by every key of the org, `rate_limit_used` of
 * it now; `key_max_ttl` the longest a key of the org lives.
 */
/** `record`, `users`, `keys`: listed with `in_use` (whether the org has a record; how many users and keys name it) */
export const OrgViewSchema = Type.Object(
  {
    org: Str,
    name: OptStr,
    rate_limit: OptStr,
    rate_limit_used: Type.Optional(Type.Integer()),
    key_max_ttl: OptStr,
    quota: OptStr,
    credits: OptStr,
    record: Type.Optional(Type.Boolean()),
    users: Type.Optional(Type.Integer()),
    keys: Type.Optional(Type.Integer())
  },
  closed
)
export type OrgView = Static<typeof OrgViewSchema>

/** One change in the audit trail; `org`: the org of the object it concerns, when it has one. */
export const AuditEntrySchema = Type.Object(
  { id: Str, time: Str, actor: Str, action: Str, target: Str, result: Str, org: OptStr, detail: OptStr },
  closed
)
export type AuditEntry = Static<typeof AuditEntrySchema>

/** `result`: `denied: <why>` (a front end's permission check) or `error: <message>` (the registry's) */
export const RefusalAttemptSchema = Type.Object({ time: Str, target: Str, result: Str }, closed)
export type RefusalAttempt = Static<typeof RefusalAttemptSchema>

/** The refused attempts of one principal, action and org within one minute (`2027-01-31T00:00:00Z`). */
export const RefusalAggregateSchema = Type.Object({
  minute: Str,
  actor: Str,
  action: Str,
  org: OptStr,
  count: Type.Integer(),
  first: RefusalAttemptSchema,
  last: RefusalAttemptSchema
}, closed)
export type RefusalAggregate = Static<typeof RefusalAggregateSchema>

/** A user record's view. */
export function userViewOf (id: string, r: Readonly<Record<string, string>>): UserView {
  return { id, org: r.org, role: r.role, status: r.status, name: r.name, email: r.email }
}

/** A role record's view: its permissions as a list. */
export function roleViewOf (name: string, r: Readonly<Record<string, string>>): RoleView {
  const view: RoleView = { name, permissions: (r.permissions ?? '').split(/\s+/).filter((p) => p !== '') }
  if (r.description !== undefined) view.description = r.description
  if (r.rate_limit !== undefined && r.rate_limit !== '') view.rate_limit = r.rate_limit
  return view
}

/** An org record's fields a view shows, each when set (an empty field is none). */
const ORG_VIEW_FIELDS = ['name', 'rate_limit', 'key_max_ttl', 'quota', 'credits'] as const

/** An org record's view (without its limit's use, which the store reads). */
export function orgViewOf (org: string, r: Readonly<Record<string, string>>): OrgView {
  const view: OrgView = { org }
  for (const field of ORG_VIEW_FIELDS) {
    const value = r[field]
    if (value !== undefined && value !== '') view[field] = value
  }
  return view
}

/**
 * An allowance as it stands (docs/quotas.md): the quota's period, what is used of it and
 * left, when it refills; the credits granted, spent and left (below 0: overdrawn by
 * `cost: upstream` requests). Absent: none set.
 */
export const AllowanceViewSchema = Type.Object({
  quota: Type.Optional(Type.Object({
    quota: Str,
    limit: Type.Integer(),
    used: Type.Integer(),
    remaining: Type.Integer(),
    period_start: Str,
    resets_at: Str
  }, closed)),
  credits: Type.Optional(Type.Object(
    { granted: Type.Integer(), spent: Type.Integer(), remaining: Type.Integer() }, closed
  ))
}, closed)
export type AllowanceView = Static<typeof AllowanceViewSchema>

/** A key's allowance and its org's: every one that applies to the key's requests. */
export const KeyQuotaViewSchema = Type.Object({
  id: Str,
  org: Str,
  /** the key whose count the key spends (itself, or the key it replaced) */
  meter: Str,
  key: AllowanceViewSchema,
  org_allowance: AllowanceViewSchema
}, closed)
export type KeyQuotaView = Static<typeof KeyQuotaViewSchema>

/**
 * An identity (`keygate:identity:<id>`, docs/identities.md): its org, its external id, its
 * `meta`, its rate limit (with `rate_limit_used` now) and allowance, and how many keys name it.
 */
export const IdentityViewSchema = Type.Object({
  id: Str,
  org: Str,
  external_id: Str,
  meta: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  rate_limit: OptStr,
  rate_limit_used: Type.Optional(Type.Integer()),
  quota: OptStr,
  credits: OptStr,
  keys: Type.Optional(Type.Array(Str)),
  allowance: Type.Optional(AllowanceViewSchema)
}, closed)
export type IdentityView = Static<typeof IdentityViewSchema>

/** An identity record's view (without its keys, its limit's use and its allowance, which the store reads). */
export function identityViewOf (id: string, r: Readonly<Record<string, string>>): IdentityView {
  const view: IdentityView = { id, org: r.org ?? '', external_id: r.external_id ?? '' }
  const meta = metaObjectOf(r.meta)
  if (meta !== undefined) view.meta = meta
  for (const field of ['rate_limit', 'quota', 'credits'] as const) {
    const value = r[field]
    if (value !== undefined && value !== '') view[field] = value
  }
  return view
}

/** A record's `meta` text as the object admins are shown; undefined when absent or not a JSON object. */
export function metaObjectOf (text: string | null | undefined): Record<string, unknown> | undefined {
  if (text == null || text === '') return undefined
  try {
    const meta: unknown = JSON.parse(text)
    if (typeof meta === 'object' && meta !== null && !Array.isArray(meta)) return meta as Record<string, unknown>
  } catch {}
  return undefined
}
