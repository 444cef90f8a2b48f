/**
 * Keys out of log lines. Anything shaped like a key, `<prefix><16 base62>_<rest>`
 * (the prefix in any case: a secret behind a mistyped prefix is still a secret), is
 * written as `<prefix><id>_[redacted]`: the public key id at most, never the secret.
 * Used by every log line and span that carries text a client shaped: the data plane's
 * path, the admin API's detail and route, validation messages (query and body property
 * names), audit entries.
 *
 * Text holding `%` is read percent-decoded too, again and again until it no longer
 * changes (`%255F` is `%5F` is `_`), so no depth of encoding hides a key: a text that
 * held one is written decoded, with the key redacted. Decoding stops after
 * MAX_ROUNDS; a text still changing then is written as `[redacted]` whole (fail
 * closed). Text without a key is written as it came.
 */
import { ID_LENGTH, type KeyPrefixes } from './registry/key-format.js'

export interface Redactor {
  /** `text` with every key-shaped run, in any depth of percent-encoding, replaced by its id and `_[redacted]` */
  text: (text: string) => string
  /** A request path for the log: as `text` (tested cheaply first: a key holds `_` or an escape). */
  path: (path: string) => string
}

export const REDACTED = '[redacted]'

/**
 * Decoding rounds: a key encoded once, twice or three times is found, and one more round
 * tells that text stopped changing.
 */
export const MAX_ROUNDS = 4

/** `keyPrefix`: the live keys' prefix, or both (`keyPrefixesOf`): a test key is a secret too */
export function createRedactor (keyPrefix: KeyPrefixes): Redactor {
  const prefixes = typeof keyPrefix === 'string' ? [keyPrefix] : keyPrefix
  const escaped = prefixes.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')
  // the secret runs on to the next character that is not base62, or to the next key's start
  // (keys written one after the other are each found)
  const next = `(?:${escaped})[0-9A-Za-z]{${ID_LENGTH}}_`
  const shape = new RegExp(`(${escaped})([0-9A-Za-z]{${ID_LENGTH}})_(?:(?!${next})[0-9A-Za-z])*`, 'gi')

  /** One layer: key-shaped runs replaced, no decoding. */
  function plain (value: string): string {
    if (!value.includes('_')) return value
    shape.lastIndex = 0
    if (!shape.test(value)) return value
    shape.lastIndex = 0
    return value.replace(shape, (_m, prefix: string, id: string) => `${prefix}${id}_${REDACTED}`)
  }

  function text (value: string): string {
    let current = plain(value)
    let found = current !== value
    if (!value.includes('%')) return current
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const decoded = safeDecode(current)
      if (decoded === current) return found ? current : value
      current = plain(decoded)
      if (current !== decoded) found = true
    }
    // still changing after MAX_ROUNDS: what a further round would find is unknown
    return safeDecode(current) === current ? (found ? current : value) : REDACTED
  }

  return { text, path: text }
}

function safeDecode (value: string): string {
  if (!value.includes('%')) return value
  try {
    return decodeURIComponent(value)
  } catch {
    // a malformed escape somewhere: decode the well-formed ones; in a run that is not
    // UTF-8, each ASCII escape alone (a key is ASCII, and may follow a stray `%C3`)
    return value.replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        return run.replace(/%([0-7][0-9A-Fa-f])/g, (_e, hex: string) => String.fromCharCode(parseInt(hex, 16)))
      }
    })
  }
}
