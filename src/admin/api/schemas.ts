/**
 * The admin API's JSON schemas (TypeBox: one definition gives the validator, the
 * response serialiser and the TypeScript type). Every object is closed
 * (`additionalProperties: false`): an unknown field is a 400, and a response can
 * only ever carry the fields listed here (never a hash). The registry's views (keys,
 * users, roles, audit entries) are the store's own (src/admin/model/views.ts).
 * Here: what several routes files share, and the keys', users', roles', orgs' and
 * audit trail's schemas; a resource whose schemas only its own routes use keeps them
 * beside those (usage, session, identities, quotas, webhooks, the request log).
 * Reference: docs/admin-api.md.
 */
import { Type, type TString } from '@sinclair/typebox'
import { DURATION } from '../../config/duration.js'
import { CURSOR, IMPORTED_KEY_MAX, KEY_NAME_MAX, ORG_NAME_MAX } from '../model/limits.js'
import { NAME } from '../../registry/records.js'
import { RATE_LIMIT_PATTERN } from '../../config/rate-limit.js'
import { QUOTA_PATTERN } from '../../config/quota.js'
import {
  AuditEntrySchema, CreatedKeySchema, KeyViewSchema, OrgViewSchema, RefusalAggregateSchema, RoleViewSchema,
  UserViewSchema
} from '../model/views.js'
import { ID_LENGTH } from '../../registry/key-format.js'

const closed = { additionalProperties: false } as const

/** user ids, org names, role names: as the registry accepts them */
const Name = Type.String({ pattern: NAME.source })
/** the public key id (never the whole key) */
const KeyId = Type.String({ pattern: `^[0-9A-Za-z]{${ID_LENGTH}}$` })
/** durations as everywhere in keygate (docs/configuration.md): 30s, 15m, 24h, 90d */
const Duration = Type.String({ pattern: DURATION.source })
/** free text shown to people: bounded, no control characters */
const Label = (maxLength: number): TString => Type.String({ maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*$' })
/**
 * the grammar is checked with the rest of the write, so that a refusal names each bad one (src/config/permission.ts)
 */
const Permission = Type.String({ maxLength: 200 })
/**
 * a key's scope and allowed addresses: checked with the rest of the write, each bad entry named
 * (src/admin/policy/key-input.ts)
 */
const Permissions = Type.Array(Permission, { maxItems: 256 })
const Cidrs = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 })
/** `<count>/<period>`, as every record holds it (src/config/rate-limit.ts) */
const RateLimit = Type.String({ pattern: RATE_LIMIT_PATTERN })
/** a limit, or null: remove it */
const RateLimitOrNull = Type.Union([RateLimit, Type.Null()])

// ---- params and queries ----------------------------------------------------

export const KeyParams = Type.Object({ id: KeyId }, closed)
export const UserParams = Type.Object({ id: Name }, closed)
export const RoleParams = Type.Object({ name: Name }, closed)
export const OrgParams = Type.Object({ org: Name }, closed)

export const ListKeysQuery = Type.Object({
  user: Type.Optional(Name),
  org: Type.Optional(Name),
  unused_for: Type.Optional(Duration),
  /** with org: only the active keys that outlive the org's key_max_ttl */
  over_policy: Type.Optional(Type.Literal('true')),
  /** a case-insensitive substring of the key's name, id, user or role */
  q: Type.Optional(Label(100)),
  /** keys per page, 1-1000 (default 100): with limit or cursor the answer is one page, in key id order */
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  /** the previous page's next_cursor */
  cursor: Type.Optional(KeyId)
}, closed)
export const ListUsersQuery = Type.Object({ org: Type.Optional(Name) }, closed)
export const ListOrgsQuery = Type.Object(
  { in_use: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) },
  closed
)
export const DeleteRoleQuery = Type.Object(
  { force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) },
  closed
)
export const AuditQuery = Type.Object({
  since: Type.Optional(Duration),
  /** entries per page, 1-1000 (default 100) */
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  /** the previous page's next_cursor */
  cursor: Type.Optional(Type.String({ pattern: CURSOR.source }))
}, closed)
export const NoQuery = Type.Object({}, closed)

// ---- bodies (an absent body is read as {}) ----------------------------------

export const CreateKeyBody = Type.Object({
  type: Type.Union([Type.Literal('personal'), Type.Literal('bot')]),
  user: Type.Optional(Name),
  role: Type.Optional(Name),
  org: Type.Optional(Name),
  name: Type.Optional(Label(KEY_NAME_MAX)),
  expires_in: Type.Optional(Duration),
  /** the user the key is recorded as created by (stored as `user:<id>`); admin only */
  created_by: Type.Optional(Name),
  /** the key's own rate limit; admin only */
  rate_limit: Type.Optional(RateLimit),
  /** the key's allowance (docs/quotas.md): `<count>/<day|week|month>` and credits; admin only */
  quota: Type.Optional(Type.String({ pattern: QUOTA_PATTERN })),
  credits: Type.Optional(Type.Integer({ minimum: 0, maximum: 999_999_999_999_999 })),
  /** the permissions the key is narrowed to: within its role's and the caller's own */
  scope: Type.Optional(Permissions),
  /** the client addresses (IPv4/IPv6 CIDRs) the key may be used from */
  allowed_cidrs: Type.Optional(Cidrs),
  /** `test`: a test key, with keys.test_prefix, whose requests reach only a route's test_upstream */
  env: Type.Optional(Type.Union([Type.Literal('live'), Type.Literal('test')])),
  /** BOT keys: the identity (of the key's org) whose limits and allowance it shares; `meta`: a JSON object ≤ 1 KB */
  identity: Type.Optional(Name),
  meta: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
}, closed)
/** not given: kept; null: removed. `shadow`: recorded as the key's shadow restriction, tried and never enforced */
export const RestrictKeyBody = Type.Object({
  scope: Type.Optional(Type.Union([Permissions, Type.Null()])),
  allowed_cidrs: Type.Optional(Type.Union([Cidrs, Type.Null()])),
  shadow: Type.Optional(Type.Boolean())
}, closed)
export const KeyLimitBody = Type.Object({ rate_limit: RateLimitOrNull }, closed)
export const RotateKeyBody = Type.Object({ grace: Type.Optional(Duration) }, closed)
export const PutUserBody = Type.Object({
  org: Name,
  role: Name,
  name: Type.Optional(Label(200)),
  email: Type.Optional(Label(254))
}, closed)
export const PutRoleBody = Type.Object({
  permissions: Type.Array(Permission, { maxItems: 256 }),
  description: Type.Optional(Label(500)),
  /** not given: kept; null: removed */
  rate_limit: Type.Optional(RateLimitOrNull)
}, closed)
export const PutOrgBody = Type.Object({
  name: Type.Optional(Label(ORG_NAME_MAX)),
  /** not given: kept; null: removed */
  rate_limit: Type.Optional(RateLimitOrNull),
  /** the longest a key created or rotated in the org lives; not given: kept; null: removed */
  key_max_ttl: Type.Optional(Type.Union([Duration, Type.Null()]))
}, closed)
export const EmptyBody = Type.Object({}, closed)
/** leaked keys from a scanner (the one body that holds whole keys: docs/leaks.md) */
export const LeakedKeysBody = Type.Object({
  keys: Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 1000 }),
  /** where they were found: a URL, or the scanner's name */
  source: Type.String({ minLength: 1, maxLength: 1024 })
}, closed)
/** one key brought from another system: the object an import file has a line each (docs/imports.md) */
export const ImportRecord = Type.Object({
  type: Type.Union([Type.Literal('personal'), Type.Literal('bot')]),
  /** personal keys: the user the key acts as */
  user: Type.Optional(Name),
  /** BOT keys: the role the key acts with, and its org */
  role: Type.Optional(Name),
  org: Type.Optional(Name),
  name: Type.Optional(Label(KEY_NAME_MAX)),
  /** ISO 8601 UTC */
  expires_at: Type.Optional(Type.String({ maxLength: 40 })),
  /** the key as a client sends it after `Bearer ` (never stored: hashed as it is read) */
  key: Type.Optional(Type.String({ minLength: 1, maxLength: IMPORTED_KEY_MAX, pattern: '^[A-Za-z0-9\\-._~+/]+=*$' })),
  /** instead of key: the SHA-256 of the whole key */
  sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' }))
}, closed)
/** records in one import, at most */
export const IMPORT_RECORDS_MAX = 1000
/** an import's body: a JSON array of records, every one good or nothing imported */
export const ImportKeysBody = Type.Array(ImportRecord, { minItems: 1, maxItems: IMPORT_RECORDS_MAX })
/** what the validator holds the body to: its records are checked one by one, every bad one named (key-routes.ts) */
export const ImportKeysBodyOuter = Type.Array(Type.Unknown(), { minItems: 1, maxItems: IMPORT_RECORDS_MAX })
export const DeactivateBody = Type.Object({
  /** revoke the BOT keys the user created, in the same change */
  revoke_created_keys: Type.Optional(Type.Boolean())
}, closed)
export const ActivateBody = EmptyBody

// ---- responses ---------------------------------------------------------------

const Str = Type.String()
const OptStr = Type.Optional(Str)

/** `next_cursor`: a paged listing's next page (absent on the last, and without paging) */
export const KeyList = Type.Object({ keys: Type.Array(KeyViewSchema), next_cursor: OptStr }, closed)

/** what a write accepted but the caller should know (an org with no record): like an error's details */
const Warnings = Type.Optional(Type.Array(Type.Object({ field: OptStr, reason: Str }, closed)))

export const CreatedKeyResponse = Type.Object({ ...CreatedKeySchema.properties, warnings: Warnings }, closed)
/** per reported key, in order: its SHA-256 (hex) and label; a true positive's key id */
export const LeakedKeysResponse = Type.Object({
  results: Type.Array(Type.Object({
    token_hash: Str,
    label: Type.Union([Type.Literal('true_positive'), Type.Literal('false_positive')]),
    id: OptStr,
    /** `test` for a test key; absent: live */
    env: Type.Optional(Type.Literal('test'))
  }, closed)),
  /** how many keys this report revoked (the others were revoked already, or are none of the caller's keys) */
  revoked: Type.Integer()
}, closed)
/** per record, in order: its index in the request and the key id it got (never the key, never its hash) */
export const ImportedKeysResponse = Type.Object({
  keys: Type.Array(Type.Object(
    { index: Type.Integer({ minimum: 0 }), id: Str, type: Str, org: Str, name: Str },
    closed
  )),
  warnings: Warnings
}, closed)
export const Changed = Type.Object({ id: Str, changed: Type.Boolean() }, closed)
export const UserStatusChanged = Type.Object({
  id: Str,
  changed: Type.Boolean(),
  /** the active BOT keys the user created (and this change left active) */
  created_keys: Type.Array(Str),
  /** the ones this change revoked (`revoke_created_keys`) */
  revoked_keys: Type.Array(Str)
}, closed)

export const PutUserResponse = Type.Object({ ...UserViewSchema.properties, warnings: Warnings }, closed)
export const UserList = Type.Object({ users: Type.Array(UserViewSchema) }, closed)

export const RoleList = Type.Object({ roles: Type.Array(RoleViewSchema) }, closed)
export const OrgList = Type.Object({ orgs: Type.Array(OrgViewSchema) }, closed)
export const RoleDeleted = Type.Object({ name: Str, users: Type.Array(Str), keys: Type.Array(Str) }, closed)

export const AuditList = Type.Object({ entries: Type.Array(AuditEntrySchema), next_cursor: OptStr }, closed)
export const RefusalList = Type.Object({ entries: Type.Array(RefusalAggregateSchema), next_cursor: OptStr }, closed)
