/**
 * Keys out of log lines. Anything shaped like a key, `<prefix><16 base62>_<rest>`
 * (the prefix in any case: a secret behind a mistyped prefix is still a secret), is
 * written as `<prefix><id>_[redacted]`: the public key id at most, never the secret.
 * Used by every log line that carries text a client shaped: the data plane's path,
 * the admin API's detail and route, validation messages, audit entries.
 */
import { ID_LENGTH } from './registry/key-material.js'

export interface Redactor {
  /** `text` with every key-shaped run replaced by its id and `_[redacted]` */
  text: (text: string) => string
  /**
   * A request path for the log: tested cheaply first (a key holds `_`), and read
   * percent-decoded as well, so `%5F` or an encoded prefix hides no key; a path that
   * held one is logged decoded, with the key redacted.
   */
  path: (path: string) => string
}

export const REDACTED = '[redacted]'

export function createRedactor (keyPrefix: string): Redactor {
  const escaped = keyPrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const shape = new RegExp(`(${escaped})([0-9A-Za-z]{${ID_LENGTH}})_[0-9A-Za-z]*`, 'gi')

  function text (value: string): string {
    if (!value.includes('_')) return value
    shape.lastIndex = 0
    if (!shape.test(value)) return value
    shape.lastIndex = 0
    return value.replace(shape, (_m, prefix: string, id: string) => `${prefix}${id}_${REDACTED}`)
  }

  function path (value: string): string {
    if (value.includes('%')) {
      const decoded = safeDecode(value)
      if (decoded !== value) {
        const redacted = text(decoded)
        return redacted === decoded ? value : redacted
      }
    }
    return text(value)
  }

  return { text, path }
}

function safeDecode (value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    // a malformed escape somewhere: decode the well-formed ones
    return value.replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        return run
      }
    })
  }
}
