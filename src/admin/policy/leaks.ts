/**
 * Leaked keys: a reported token that is a live key (the store finds it: its record holds
 * the token's hash) is revoked, `revoked_reason leaked`, `leak_source` where it was
 * found. An admin revokes every key; an org admin every key of its org it sees,
 * whatever its role (the report holds the key, so its sender holds the key's authority
 * already: revoking only takes access away); a key it does not see is a false positive,
 * exactly like a token that is no key. A key already revoked is left as it is and still
 * a true positive, so a replayed report changes nothing twice.
 */
import { createRedactor } from '../../redact.js'
import type { Fields } from '../model/snapshot.js'
import type { AdminScope } from '../model/principal.js'
import { LEAK_SOURCE_MAX } from '../model/limits.js'
import { requireOrgAdmin, seesKey } from './scope-rules.js'
import type { KeyPrefixes } from '../../registry/key-format.js'

export type LeakLabel = 'true_positive' | 'false_positive'

/** One reported token and where it was found (a URL, or a scanner's own words). */
export interface LeakReport {
  token: string
  source: string
}

export interface LeakOutcome {
  label: LeakLabel
  /** the key id, for a true positive */
  id?: string
  /** whether this report revoked it (false: it was revoked already) */
  revoked?: boolean
  /** `test` for a test key (docs/test-keys.md); absent: live */
  env?: 'test'
}

/** Who may report leaks: an admin or an org admin. */
export function checkLeakReporter (s: AdminScope): void {
  requireOrgAdmin(s, 'reporting leaked keys')
}

/** What a report does to the live key a token is (`record`: its fields; undefined: the token is no key). */
export function leakVerdict (
  s: AdminScope,
  record: Fields | undefined
): 'false_positive' | 'revoked_already' | 'revoke' {
  const status = record?.status
  if (record === undefined || status === undefined) return 'false_positive'
  const owner = { type: record.type ?? '', org: record.org ?? '', user: record.user, created_by: record.created_by }
  if (s.scope !== 'admin' && !seesKey(s, owner)) return 'false_positive'
  return status === 'revoked' ? 'revoked_already' : 'revoke'
}

/** Printable, one line, bounded, no key in it: it is shown in `keys show`, the console and the audit trail. */
export function leakSource (source: string, keyPrefix: KeyPrefixes): string {
  // eslint-disable-next-line no-control-regex
  const clean = createRedactor(keyPrefix).text(source.replace(/[\u0000-\u001f\u007f]/g, '')).trim()
  return (clean === '' ? 'unknown' : clean).slice(0, LEAK_SOURCE_MAX)
}
