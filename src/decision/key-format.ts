/**
 * The key format stage: the key's format, checked locally: the prefix, a 16-character base62 id,
 * `_`, a 32-character base62 secret, and the checksum of all before it
 * (src/registry/key-material.ts makes keys). A mistyped key is refused here, without
 * a registry lookup; a key that was never issued can still pass (a CRC is no MAC),
 * and the per-peer budget of unknown-key lookups bounds what those cost
 * (unknown-key-limit.ts).
 */
import { checksum, CHECKSUM_LENGTH, ID_LENGTH, SECRET_LENGTH } from '../registry/key-material.js'

export interface ParsedKey {
  id: string
  secret: string
}

export type KeyParse = ParsedKey | 'malformed_credential' | 'bad_checksum'

const BASE62 = /^[0-9A-Za-z]+$/

/** Shape, then checksum. Never touches the registry. */
export function parseKey (token: string, prefix: string): KeyParse {
  const expected = prefix.length + ID_LENGTH + 1 + SECRET_LENGTH + CHECKSUM_LENGTH
  if (token.length !== expected || !token.startsWith(prefix)) return 'malformed_credential'
  const sep = prefix.length + ID_LENGTH
  if (token[sep] !== '_') return 'malformed_credential'
  const id = token.slice(prefix.length, sep)
  const rest = token.slice(sep + 1)
  if (!BASE62.test(id) || !BASE62.test(rest)) return 'malformed_credential'
  const body = token.slice(0, token.length - CHECKSUM_LENGTH)
  if (checksum(body) !== token.slice(-CHECKSUM_LENGTH)) return 'bad_checksum'
  return { id, secret: rest.slice(0, SECRET_LENGTH) }
}
