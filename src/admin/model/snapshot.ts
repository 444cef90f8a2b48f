/**
 * The registry records an admin write reads before the policy decides, read once and
 * WATCHed (src/admin/store/snapshot.ts), handed to the policy as plain data: a record is
 * its Redis hash's fields, and a record that does not exist is absent. A key record's
 * `hash` is never in it.
 */

/** A record as Redis holds it (HGETALL). */
export type Fields = Readonly<Record<string, string>>

export interface Snapshot {
  users: ReadonlyMap<string, Fields>
  roles: ReadonlyMap<string, Fields>
  orgs: ReadonlyMap<string, Fields>
  keys: ReadonlyMap<string, Fields>
  /** identity records (docs/identities.md) */
  identities: ReadonlyMap<string, Fields>
  /** imported keys' lookups: the SHA-256 of a token -> its key id */
  imported: ReadonlyMap<string, string>
  /** the email index: an email (lower case) -> the user whose record holds it */
  emails: ReadonlyMap<string, string>
}

/** The records to read, by kind; an undefined name is skipped. */
export interface SnapshotNames {
  users?: Iterable<string | undefined>
  roles?: Iterable<string | undefined>
  orgs?: Iterable<string | undefined>
  keys?: Iterable<string | undefined>
  identities?: Iterable<string | undefined>
  imported?: Iterable<string>
  /** emails, lower case */
  emails?: Iterable<string | undefined>
}

/** A snapshot's records as plain objects, by kind. */
export interface SnapshotRecords {
  users?: Record<string, Fields>
  roles?: Record<string, Fields>
  orgs?: Record<string, Fields>
  keys?: Record<string, Fields>
  identities?: Record<string, Fields>
  imported?: Record<string, string>
  emails?: Record<string, string>
}

/** A snapshot of the given records (the policy's unit tables build theirs this way). */
export function snapshotOf (records: SnapshotRecords = {}): Snapshot {
  return {
    users: new Map(Object.entries(records.users ?? {})),
    roles: new Map(Object.entries(records.roles ?? {})),
    orgs: new Map(Object.entries(records.orgs ?? {})),
    keys: new Map(Object.entries(records.keys ?? {})),
    identities: new Map(Object.entries(records.identities ?? {})),
    imported: new Map(Object.entries(records.imported ?? {})),
    emails: new Map(Object.entries(records.emails ?? {}))
  }
}
