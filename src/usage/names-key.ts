/**
 * Which decisions name a key of its holder: the usage counts (counter.ts) and the
 * request log (key-requests.ts) keep only those. A refusal whose key does not exist
 * (unknown id, bad format, bad checksum) names no key, so a client cannot fill memory
 * or Redis with ids of its choosing; one whose secret does not match
 * (`secret_mismatch`) is not the key's holder, so anyone who knows a key id (it is in
 * logs and on screens) cannot write into that key's counts or history.
 */
import type { Reason } from '../errors.js'

const NO_KEY: ReadonlySet<Reason> = new Set<Reason>([
  'missing_credential', 'malformed_credential', 'bad_checksum', 'unknown_key', 'unknown_key_limited', 'secret_mismatch'
])

/** false: a refusal that names no existing key, or names one without its secret */
export function namesKey (reason: Reason): boolean {
  return !NO_KEY.has(reason)
}
