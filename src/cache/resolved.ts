/** What the identity resolver (resolve-identity.ts) answers: the records a decision needs. */
import type { IdentityRecord, Invalid, KeyRecord, OrgRecord, RoleRecord, UserRecord } from '../registry/records.js'

/** The records one decision needs; `null` where the record does not exist. */
export interface Resolved {
  key: KeyRecord | Invalid | null
  /** personal keys only */
  user?: UserRecord | Invalid | null
  roleName?: string
  role?: RoleRecord | null
  /** the key's org record (`keygate:org:<org>`); NO_ORG_RECORD when there is none */
  org?: OrgRecord | null
  /** the identity a BOT key names (`keygate:identity:<id>`; null: no such record); undefined: it names none */
  identity?: IdentityRecord | Invalid | null
  /** the key was not looked up: the peer's budget of unknown-key lookups is spent */
  limited?: true
}

/** A user and its role (null where the record does not exist). */
export interface ResolvedUser {
  user: UserRecord | Invalid | null
  role: RoleRecord | null
}

/** An imported key's records, and its key id once the token was found. */
export interface ResolvedImport {
  keyId: string | null
  records: Resolved
}
