/**
 * Who did something, as the registry records it (a key's `created_by`, the audit
 * trail's actor): always typed, so that a user can never be mistaken for a tool.
 *
 *   user:<userId>   a user (a BOT key created by a user is that user's: ownership)
 *   key:<keyId>     a key signed in to the admin API
 *   cli:<name>      the `keygate` command line, as the operating-system user <name>
 *   admin-token     the admin API's token
 *   scanner:<name>  a secret scanner's signed report (`scanner:github`), or anyone's report on
 *                   the data plane (`scanner:public`), in the audit trail
 *
 * Only `user:` values own anything. A key made by a key records, beside `created_by:
 * key:<id>`, the human at the root of its chain of creators (`owner: user:<id>`), so
 * that whatever a person's keys make stays that person's, however many generations
 * down (offboarding revokes the whole tree). A stored value with none of these types predates
 * typing and names a user id (`keygate migrate created-by` rewrites such values).
 */
const TYPED = /^(user|key|cli|scanner):./

/** GitHub's secret scanning, as the audit trail's actor of the keys it reports */
export const GITHUB_SCANNER = 'scanner:github'
/** anyone's report on the data plane (`POST /_keygate/v1/leaked`), as the audit trail's actor */
export const PUBLIC_REPORTER = 'scanner:public'

export function userActor (userId: string): string {
  return `user:${userId}`
}

/** A stored `created_by` as a typed actor (a legacy untyped value is a user id). */
export function readCreatedBy (value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  if (value === 'admin-token' || TYPED.test(value)) return value
  return userActor(value)
}

/** The user a `created_by` makes the owner, if it names a user. */
export function ownerOf (createdBy: string | undefined): string | undefined {
  const actor = readCreatedBy(createdBy)
  return actor?.startsWith('user:') === true ? actor.slice('user:'.length) : undefined
}

/** Whether a value is already typed (what the registry writes, and what `created_by` input must be). */
export function isTypedActor (value: string): boolean {
  return readCreatedBy(value) === value
}

/** What ownership reads of a key. */
export interface OwnedKey {
  type: string
  user?: string | undefined
  created_by?: string | undefined
  owner?: string | undefined
}

/**
 * The user at the root of a key's chain of creators: a personal key's user; a BOT key's
 * `owner`, else the user its `created_by` names; undefined: no user (the CLI, the token).
 */
export function rootUserOf (key: OwnedKey): string | undefined {
  if (key.type === 'personal') return key.user
  return ownerOf(key.owner) ?? ownerOf(key.created_by)
}

/** The keys a user owns: their personal keys, and the BOT keys at the root of whose chain they are. */
export function ownsKey (user: string, key: OwnedKey): boolean {
  return key.user === user || (key.type === 'bot' && rootUserOf(key) === user)
}
