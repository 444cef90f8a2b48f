// Well-formed keys that were never issued, each with a valid checksum (a CRC-32,
// which anyone can compute): 1,000,000 distinct ids, used in order and cycled. Each
// key is built when it is sent, so the list costs no memory.
import { assembleKey } from '@keygate/gateway/dist/registry/key-format.js'

export const FORGED_IDS = 1_000_000
const SECRET = 'f'.repeat(32)
let next = 0

/** The next forged key of the cycle (shared by every connection of this process). */
export function nextForgedKey (): string {
  const n = next
  next = (next + 1) % FORGED_IDS
  return assembleKey('kg_', 'forged' + n.toString(36).padStart(10, '0'), SECRET)
}

let nextForeign = 0

/**
 * The next forged foreign-format token (docs/imports.md: 32 hex characters, as Kong's
 * key-auth generates), 1,000,000 distinct ones cycled like the keys above. With
 * `keys.accept_imported` each is looked up as an imported key: no checksum refuses it
 * locally, so only the unknown-key budget keeps Redis out.
 */
export function nextForgedForeignToken (): string {
  const n = nextForeign
  nextForeign = (nextForeign + 1) % FORGED_IDS
  return 'f0' + n.toString(16).padStart(30, '0')
}
