/**
 * Key format (contract section 3): `<prefix><id>_<secret><checksum>`
 *
 *   prefix    configurable, default `kg_`, so scanners and humans recognise a key
 *   id        16 base62 chars: the public selector, shown in logs, headers, CLI
 *   secret    32 base62 chars from the CSPRNG: ~190 bits, only its SHA-256 is stored
 *   checksum  6 base62 chars of CRC-32 over everything before it, so a mistyped or
 *             random key is refused without a registry lookup
 */
import { createHash, hash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const ID_LENGTH = 16
const SECRET_LENGTH = 32
const CHECKSUM_LENGTH = 6
/** a base62 digit's value by character code, 0xFF for every other character below 128 */
const BASE62_VALUE = new Uint8Array(128).fill(0xFF)
for (let i = 0; i < ALPHABET.length; i++) BASE62_VALUE[ALPHABET.charCodeAt(i)] = i

export interface ParsedKey {
  id: string
  secret: string
}

export type KeyParse = ParsedKey | 'malformed_credential' | 'bad_checksum'

/** Uniform base62 characters by rejection sampling (no modulo bias). */
function randomBase62 (length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62]
      if (out.length === length) break
    }
  }
  return out
}

function checksum (body: string): string {
  let n = crc32(body)
  let out = ''
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[n % 62] + out
    n = Math.floor(n / 62)
  }
  return out
}

export interface NewKey {
  id: string
  key: string
  hash: string
}

export function generateKey (prefix: string): NewKey {
  const id = randomBase62(ID_LENGTH)
  const secret = randomBase62(SECRET_LENGTH)
  const body = `${prefix}${id}_${secret}`
  return { id, key: body + checksum(body), hash: hashSecret(secret) }
}

/** Local checks only: shape, then checksum. Never touches the registry. */
export function parseKey (token: string, prefix: string): KeyParse {
  const expected = prefix.length + ID_LENGTH + 1 + SECRET_LENGTH + CHECKSUM_LENGTH
  if (token.length !== expected || !token.startsWith(prefix)) return 'malformed_credential'
  const sep = prefix.length + ID_LENGTH
  if (token[sep] !== '_') return 'malformed_credential'
  if (!isBase62(token, prefix.length, sep) || !isBase62(token, sep + 1, token.length)) return 'malformed_credential'
  if (!checksumMatches(token)) return 'bad_checksum'
  return { id: token.slice(prefix.length, sep), secret: token.slice(sep + 1, sep + 1 + SECRET_LENGTH) }
}

/** Every character of `text` in [from, to) is a base62 digit (loops rather than a regex: parseKey runs on every request). */
function isBase62 (text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i)
    if (c >= 128 || BASE62_VALUE[c] === 0xFF) return false
  }
  return true
}

/** The last CHECKSUM_LENGTH characters of a key are the checksum of the rest: compared digit by digit, no string built. */
function checksumMatches (key: string): boolean {
  const bodyLength = key.length - CHECKSUM_LENGTH
  let n = crc32(key.slice(0, bodyLength))
  for (let i = key.length - 1; i >= bodyLength; i--) {
    if (BASE62_VALUE[key.charCodeAt(i)] !== n % 62) return false
    n = Math.floor(n / 62)
  }
  return true
}

export function hashSecret (secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/**
 * Constant-time comparison of the secret's SHA-256 with the stored digest (the 32
 * bytes as a latin1 string, see records.ts): every byte is compared, whatever differs.
 */
export function secretMatches (secret: string, storedDigest: string): boolean {
  const actual = hash('sha256', secret, 'binary')
  if (actual.length !== storedDigest.length) return false
  let diff = 0
  for (let i = 0; i < actual.length; i++) diff |= actual.charCodeAt(i) ^ storedDigest.charCodeAt(i)
  return diff === 0
}
