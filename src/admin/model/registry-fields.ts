/**
 * What a registry file holds of each record kind, field by field: the one table that
 * the file's parser and its YAML (src/admin/as-code/), its checks and its plan
 * (src/admin/policy/), and the registry's state as the file sees it (src/admin/store/)
 * all read. A field here is a field of the Redis hash of the same name; adding one to
 * the file format is adding one line (and its check, in policy/registry-file.ts).
 * Keys, secrets and hashes are no record of these kinds and never in the file.
 */

export type Kind = 'role' | 'org' | 'user' | 'identity'

export interface FieldSpec {
  /** the field's name in the file and in the record */
  readonly name: string
  /** a YAML list of strings, stored space-separated (a role's permissions) */
  readonly list?: true
  readonly required?: true
  /** managed only when the file names it; absent, the record keeps its value */
  readonly keptWhenAbsent?: true
  /** what a new record gets when the file does not name it */
  readonly initial?: string
}

export type Section = 'roles' | 'orgs' | 'users' | 'identities'

export const KINDS: Record<Kind, { section: Section, fields: readonly FieldSpec[] }> = {
  role: {
    section: 'roles',
    fields: [{ name: 'permissions', list: true, required: true }, { name: 'description' }, { name: 'rate_limit' }]
  },
  org: {
    section: 'orgs',
    fields: [
      { name: 'name' }, { name: 'rate_limit' }, { name: 'key_max_ttl' },
      // the org's allowance (docs/quotas.md); credits, the total granted, grow by admins' additions: a file that
      // does not name them keeps them
      { name: 'quota' }, { name: 'credits', keptWhenAbsent: true }
    ]
  },
  user: {
    section: 'users',
    fields: [
      { name: 'org', required: true },
      { name: 'role', required: true },
      { name: 'name' },
      { name: 'email' },
      // deactivation is often an incident's answer: a file that does not say keeps it
      { name: 'status', keptWhenAbsent: true, initial: 'active' }
    ]
  },
  identity: {
    section: 'identities',
    fields: [
      { name: 'org', required: true },
      { name: 'external_id', required: true },
      // a JSON object of at most 1 KB, written as its JSON text (docs/identities.md)
      { name: 'meta' },
      { name: 'rate_limit' },
      { name: 'quota' },
      // as an org's: the total granted grows by admins' additions, a file that does not name them keeps them
      { name: 'credits', keptWhenAbsent: true }
    ]
  }
}

export const KIND_ORDER: readonly Kind[] = ['role', 'org', 'user', 'identity']

/** An empty map per kind. */
export function byKind<T> (): Record<Kind, Map<string, T>> {
  return { role: new Map(), org: new Map(), user: new Map(), identity: new Map() }
}

/** A record's fields as the file sees them: only those of the table, empty ones dropped, lists normalised. */
export function fileFields (kind: Kind, record: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const f of KINDS[kind].fields) {
    const v = record[f.name]
    // (a list may be empty: a role with no permission)
    if (v === undefined || (v === '' && f.list !== true)) continue
    out[f.name] = f.list === true ? v.split(/\s+/).filter((p) => p !== '').join(' ') : v
  }
  return out
}

/** The fields a record holds (with a value) that a registry file cannot carry, sorted. */
export function unfiledFields (kind: Kind, record: Record<string, string>): string[] {
  const filed = new Set(KINDS[kind].fields.map((f) => f.name))
  return Object.keys(record).filter((f) => !filed.has(f) && record[f] !== '').sort()
}

/** Where in the file: line and column, from 1. */
export interface Place {
  line: number
  col: number
}

export interface FileProblem {
  /** undefined: the problem is not at one place in the file (what --prune would delete) */
  place: Place | undefined
  /** where in the document: `users.alice.role` */
  path: string
  message: string
}

/** A record the file asks for: its fields, where it is (its name), and where each field's value is. */
export interface DesiredRecord {
  fields: Record<string, string>
  place: Place
  /** each field's value's place */
  fieldPlaces: Record<string, Place>
  /** each well-formed value as written, for its checks: a scalar's, or a list's items, each with its place */
  values: Record<string, Array<{ value: string, place: Place }>>
  /** how many of the file's problems of form were found before this record was read whole (its checks follow them) */
  problemsBefore: number
}

/**
 * A registry file as read (src/admin/as-code/registry-file.ts): the records it asks for
 * and the problems of its form; the checks of its values are the policy's.
 */
export interface RegistryFile {
  /** the file covers this org only */
  org: string | undefined
  /** where the `org:` value is */
  orgPlace?: Place | undefined
  records: Record<Kind, Map<string, DesiredRecord>>
  problems: FileProblem[]
}

/**
 * The registry as a registry file sees it (src/admin/store/registry-state.ts reads it):
 * every role, org record and user with the fields of the table, and which roles active
 * BOT keys act with (a role they use is never pruned).
 */
export interface RegistryState {
  records: Record<Kind, Map<string, Record<string, string>>>
  /** role -> the active BOT keys acting with it */
  botKeys: Map<string, string[]>
  /** user -> its active personal keys (a pruned user's are revoked with it) */
  personalKeys: Map<string, string[]>
  /** identity -> the active keys naming it (an identity they name is never pruned, as `identities delete`) */
  identityKeys: Map<string, string[]>
  /** each record holding fields a file cannot carry: those fields (prune never deletes such a record) */
  unfiled: Record<Kind, Map<string, string[]>>
}

/** What applying a registry file changes (policy/registry-plan.ts plans it), record by record. */
export interface FieldChange {
  field: string
  from?: string | undefined
  to?: string | undefined
}

export interface Change {
  op: 'create' | 'change' | 'delete'
  kind: Kind
  name: string
  fields: FieldChange[]
  /** a user's or an identity's org before a change or deletion (its org index) */
  fromOrg?: string | undefined
  /**
   * a user's deletion: its active personal keys, revoked with it (`revoked_reason user_deleted`), so that a user
   * created again with the id gets none of them back
   */
  revokesKeys?: string[] | undefined
}

export interface Plan {
  changes: Change[]
  problems: FileProblem[]
}

/** A plan's or an apply's answer: its changes, or every problem (nothing written). */
export type ApplyResult = { ok: true, changes: Change[] } | { ok: false, problems: FileProblem[] }
