/**
 * The admin API's JSON schemas (TypeBox: one definition gives the validator, the
 * response serialiser and the TypeScript type). Every object is closed
 * (`additionalProperties: false`): an unknown field is a 400, and a response can
 * only ever carry the fields listed here (never a hash). Reference: docs/admin-api.md.
 */
import { Type, type Static, type TString } from '@sinclair/typebox'
import { DURATION } from '../../config/duration.js'
import { NAME, PERMISSION } from '../../registry/admin-store.js'
import { CURSOR } from '../../registry/audit-log.js'
import { ID_LENGTH } from '../../registry/key-material.js'

const closed = { additionalProperties: false } as const

/** user ids, org names, role names: as the registry accepts them */
const Name = Type.String({ pattern: NAME.source })
/** the public key id (never the whole key) */
const KeyId = Type.String({ pattern: `^[0-9A-Za-z]{${ID_LENGTH}}$` })
/** the contract's durations: 30s, 15m, 24h, 90d */
const Duration = Type.String({ pattern: DURATION.source })
/** free text shown to people: bounded, no control characters */
const Label = (maxLength: number): TString => Type.String({ maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*$' })
const Permission = Type.String({ maxLength: 200, pattern: PERMISSION.source })

// ---- params and queries ----------------------------------------------------

export const KeyParams = Type.Object({ id: KeyId }, closed)
export const UserParams = Type.Object({ id: Name }, closed)
export const RoleParams = Type.Object({ name: Name }, closed)

export const ListKeysQuery = Type.Object({
  user: Type.Optional(Name),
  org: Type.Optional(Name),
  unused_for: Type.Optional(Duration)
}, closed)
export const ListUsersQuery = Type.Object({ org: Type.Optional(Name) }, closed)
export const DeleteRoleQuery = Type.Object({ force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) }, closed)
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
  name: Type.Optional(Label(200)),
  expires_in: Type.Optional(Duration),
  /** the user the key is recorded as created by (stored as `user:<id>`); admin only */
  created_by: Type.Optional(Name)
}, closed)
export const RotateKeyBody = Type.Object({ grace: Type.Optional(Duration) }, closed)
export const PutUserBody = Type.Object({
  org: Name,
  role: Name,
  name: Type.Optional(Label(200)),
  email: Type.Optional(Label(254))
}, closed)
export const PutRoleBody = Type.Object({
  permissions: Type.Array(Permission, { maxItems: 256 }),
  description: Type.Optional(Label(500))
}, closed)
export const EmptyBody = Type.Object({}, closed)
export const DeactivateBody = Type.Object({
  /** revoke the BOT keys the user created, in the same change */
  revoke_created_keys: Type.Optional(Type.Boolean())
}, closed)
export const ActivateBody = EmptyBody

// ---- responses ---------------------------------------------------------------

const Str = Type.String()
const OptStr = Type.Optional(Str)

export const KeyView = Type.Object({
  id: Str,
  type: Str,
  org: Str,
  user: OptStr,
  role: OptStr,
  name: Str,
  status: Str,
  created_at: OptStr,
  created_by: OptStr,
  expires_at: OptStr,
  revoked_at: OptStr,
  last_used_at: OptStr,
  replaces: OptStr,
  replaced_by: OptStr
}, closed)
export const KeyList = Type.Object({ keys: Type.Array(KeyView) }, closed)

const createdKeyFields = {
  id: Str,
  /** the key itself: in these two responses only, once */
  key: Str,
  type: Str,
  org: Str,
  user: OptStr,
  role: OptStr,
  name: Str,
  created_at: Str,
  expires_at: OptStr
}
export const CreatedKey = Type.Object(createdKeyFields, closed)
export const RotatedKey = Type.Object({ ...createdKeyFields, replaces: Str, replaces_expires_at: Str }, closed)
export const Changed = Type.Object({ id: Str, changed: Type.Boolean() }, closed)
export const UserStatusChanged = Type.Object({
  id: Str,
  changed: Type.Boolean(),
  /** the active BOT keys the user created (and this change left active) */
  created_keys: Type.Array(Str),
  /** the ones this change revoked (`revoke_created_keys`) */
  revoked_keys: Type.Array(Str)
}, closed)

export const UserView = Type.Object({ id: Str, org: OptStr, role: OptStr, status: OptStr, name: OptStr, email: OptStr }, closed)
export const UserList = Type.Object({ users: Type.Array(UserView) }, closed)

export const RoleView = Type.Object({ name: Str, permissions: Type.Array(Str), description: OptStr }, closed)
export const RoleList = Type.Object({ roles: Type.Array(RoleView) }, closed)
export const RoleDeleted = Type.Object({ name: Str, users: Type.Array(Str), keys: Type.Array(Str) }, closed)

export const AuditEntry = Type.Object({ id: Str, time: Str, actor: Str, action: Str, target: Str, result: Str, org: OptStr, detail: OptStr }, closed)
export const AuditList = Type.Object({ entries: Type.Array(AuditEntry), next_cursor: OptStr }, closed)
const RefusalAttempt = Type.Object({ time: Str, target: Str, result: Str }, closed)
export const RefusalAggregate = Type.Object({
  minute: Str,
  actor: Str,
  action: Str,
  org: OptStr,
  count: Type.Integer(),
  first: RefusalAttempt,
  last: RefusalAttempt
}, closed)
export const RefusalList = Type.Object({ entries: Type.Array(RefusalAggregate), next_cursor: OptStr }, closed)

export const Session = Type.Object({
  principal: Type.Union([
    Type.Object({ kind: Type.Literal('token') }, closed),
    Type.Object({
      kind: Type.Literal('key'),
      key_id: Str,
      key_type: Str,
      user: OptStr,
      org: Str,
      role: Str,
      permissions: Type.Array(Str)
    }, closed)
  ]),
  /** `admin` (every org), `org` (the key's org), `self` (the key's user's keys) */
  scope: Type.Union([Type.Literal('admin'), Type.Literal('org'), Type.Literal('self')]),
  /** scope `admin` */
  admin: Type.Boolean(),
  /** scope `self` */
  self: Type.Boolean()
}, closed)
export const PermissionList = Type.Object({ permissions: Type.Array(Str) }, closed)

export type SessionView = Static<typeof Session>
