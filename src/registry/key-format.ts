/**
 * The key format, made, parsed and hashed in this one place, below the request path
 * and the admin wing that both use it: `<prefix><id>_<secret><checksum>`
 *
 *   prefix    configurable, default `kg_`, so scanners and humans recognise a key; a
 *             test key's is `keys.test_prefix`, default `kgt_` (docs/test-keys.md)
 *   id        16 base62 chars: the public selector, shown in logs, headers, CLI
 *   secret    32 base62 chars from the CSPRNG: ~190 bits, only its SHA-256 is stored
 *   checksum  6 base62 chars of CRC-32 over everything before it, so a mistyped key
 *             is refused without a registry lookup. A CRC is no MAC: anyone can
 *             compute it, so a key that was never issued can pass; such keys are
 *             limited per client address (src/cache/unknown-key-limit.ts).
 *
 * parseKey is the request's key format stage: a mistyped key is refused there,
 * without a registry lookup.
 */
import { createHash, hash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const ID_LENGTH = 16
export const SECRET_LENGTH = 32
export const CHECKSUM_LENGTH = 6

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

/** The checksum of everything before it: CRC-32, as 6 base62 characters. */
export function checksum (body: string): string {
  let n = crc32(body)
  let out = ''
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[n % 62] + out
    n = Math.floor(n / 62)
  }
  return out
}

/**
 * The regular expression secret scanners are given for the keys of `prefix` (docs/leaks.md
 * states it for `kg_`): the prefix, the id, `_`, then the secret and the checksum.
 */
export function keyPattern (prefix: string): string {
  return `${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}` +
    `[0-9A-Za-z]{${ID_LENGTH}}_[0-9A-Za-z]{${SECRET_LENGTH + CHECKSUM_LENGTH}}`
}

export interface NewKey {
  id: string
  key: string
  hash: string
}

/** A fresh key id alone: an imported key's (docs/imports.md), random like every key id. */
export function newKeyId (): string {
  return randomBase62(ID_LENGTH)
}

export function generateKey (prefix: string): NewKey {
  const id = randomBase62(ID_LENGTH)
  const secret = randomBase62(SECRET_LENGTH)
  return { id, key: assembleKey(prefix, id, secret), hash: hashSecret(secret) }
}

/** The key of an id and a secret (base62, 16 and 32 chars), checksum included. */
export function assembleKey (prefix: string, id: string, secret: string): string {
  const body = `${prefix}${id}_${secret}`
  return body + checksum(body)
}

export function hashSecret (secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/**
 * Constant-time comparison of the secret's SHA-256 with the stored digest (the 32
 * bytes as a latin1 string, see records.ts): every byte is compared, whatever differs.
 */
export function secretMatches (secret: string, storedDigest: string): boolean {
  return digestMatches(hash('sha256', secret, 'binary'), storedDigest)
}

/** The same constant-time comparison, of a digest already computed (the 32 bytes as a latin1 string). */
export function digestMatches (actual: string, storedDigest: string): boolean {
  if (actual.length !== storedDigest.length) return false
  let diff = 0
  for (let i = 0; i < actual.length; i++) diff |= actual.charCodeAt(i) ^ storedDigest.charCodeAt(i)
  return diff === 0
}

/** A key's environment: a test key's requests go to its route's `test_upstream`, never a live one. */
export type KeyEnv = 'live' | 'test'

export interface ParsedKey {
  id: string
  secret: string
  /** the environment its prefix says (the record's must agree: src/decision/decide.ts); none for an imported key */
  env?: KeyEnv
}

/** The prefixes of keys, the live one first, then the test one: `[keys.prefix, keys.test_prefix]`. */
export type KeyPrefixes = string | readonly string[]

/** The prefix of a new key of `env` (a record's `env` field: `test`, or absent for live). */
export function prefixFor (prefixes: KeyPrefixes, env: string | undefined): string {
  if (typeof prefixes === 'string') {
    if (env === 'test') throw new Error('test keys need keys.test_prefix')
    return prefixes
  }
  return (env === 'test' ? prefixes[1] : prefixes[0]) ?? ''
}

/** Both prefixes of the configuration's `keys`, the live one first. */
export function keyPrefixesOf (keys: { prefix: string, test_prefix: string }): readonly string[] {
  return [keys.prefix, keys.test_prefix]
}

export type KeyParse = ParsedKey | 'malformed_credential' | 'bad_checksum'

const BASE62 = /^[0-9A-Za-z]+$/

/**
 * Shape, then checksum. Never touches the registry. With two prefixes, a token of the
 * second (the test prefix) is a test key.
 */
export function parseKey (token: string, prefixes: KeyPrefixes): KeyParse {
  if (typeof prefixes === 'string') return parseOne(token, prefixes, 'live')
  const test = prefixes[1]
  if (test !== undefined && token.startsWith(test) && token.length === keyLength(test)) {
    return parseOne(token, test, 'test')
  }
  return parseOne(token, prefixes[0] ?? '', 'live')
}

function keyLength (prefix: string): number {
  return prefix.length + ID_LENGTH + 1 + SECRET_LENGTH + CHECKSUM_LENGTH
}

function parseOne (token: string, prefix: string, env: KeyEnv): KeyParse {
  const expected = prefix.length + ID_LENGTH + 1 + SECRET_LENGTH + CHECKSUM_LENGTH
  if (token.length !== expected || !token.startsWith(prefix)) return 'malformed_credential'
  const sep = prefix.length + ID_LENGTH
  if (token[sep] !== '_') return 'malformed_credential'
  const id = token.slice(prefix.length, sep)
  const rest = token.slice(sep + 1)
  if (!BASE62.test(id) || !BASE62.test(rest)) return 'malformed_credential'
  const body = token.slice(0, token.length - CHECKSUM_LENGTH)
  if (checksum(body) !== token.slice(-CHECKSUM_LENGTH)) return 'bad_checksum'
  return { id, secret: rest.slice(0, SECRET_LENGTH), env }
}
