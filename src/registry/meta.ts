/**
 * `meta` (docs/identities.md): a JSON object of at most META_MAX_BYTES, on a key record
 * and on an identity record, sent upstream as `<prefix>Meta` (base64url of the JSON, the
 * key's fields over the identity's) and as the assertion's `meta` claim. Parsed once,
 * when a record enters the cache; the admin front ends check what they write with
 * `metaProblem`, so a stored value always parses. Its content is the team's own data:
 * it is never put in a log line, a span, a metric, an audit detail or an error.
 */
import { INVALID, type Invalid } from './invalid.js'

/** the largest `meta`, in bytes of its compact JSON text (UTF-8) */
export const META_MAX_BYTES = 1024

export interface Meta {
  /** the object (frozen; its values are JSON values) */
  readonly value: Readonly<Record<string, unknown>>
  /** its compact JSON text, as the assertion's `meta` claim holds it */
  readonly json: string
  /** base64url of `json`: the `<prefix>Meta` header's value */
  readonly header: string
}

type Field = string | null | undefined

/** What is wrong with a `meta` value an admin sends (an object); undefined: nothing. Never quotes the value. */
export function metaProblem (value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'meta must be a JSON object'
  let json: string
  try {
    json = JSON.stringify(value)
  } catch {
    return 'meta must be a JSON object'
  }
  const bytes = Buffer.byteLength(json, 'utf8')
  if (bytes > META_MAX_BYTES) return `meta is ${bytes} bytes of JSON, more than ${META_MAX_BYTES}`
  return undefined
}

/** The compact JSON text an admin front end stores for a checked `meta` object. */
export function metaText (value: Record<string, unknown>): string {
  return JSON.stringify(value)
}

/**
 * A record's `meta` field -> Meta; undefined when absent or empty; INVALID when it is not
 * a JSON object of at most META_MAX_BYTES (a hand edit gone wrong: the record is refused).
 */
export function parseMeta (text: Field): Meta | Invalid | undefined {
  if (text == null || text === '') return undefined
  if (Buffer.byteLength(text, 'utf8') > META_MAX_BYTES) return INVALID
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return INVALID
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return INVALID
  return made(value as Record<string, unknown>)
}

function made (value: Record<string, unknown>): Meta {
  const json = JSON.stringify(value)
  return Object.freeze({ value: Object.freeze(value), json, header: Buffer.from(json, 'utf8').toString('base64url') })
}

/** merged metas, by the key's Meta then the identity's: each pair merged once */
const merged = new WeakMap<Meta, WeakMap<Meta, Meta>>()

/** What is sent: the key's fields over the identity's; undefined when neither has any. */
export function mergeMeta (key: Meta | undefined, identity: Meta | undefined): Meta | undefined {
  if (identity === undefined) return key
  if (key === undefined) return identity
  let byIdentity = merged.get(key)
  if (byIdentity === undefined) {
    byIdentity = new WeakMap()
    merged.set(key, byIdentity)
  }
  const known = byIdentity.get(identity)
  if (known !== undefined) return known
  const both = made({ ...identity.value, ...key.value })
  byIdentity.set(identity, both)
  return both
}
