/**
 * The text of registry values: strings held as long as a cache entry, copied flat,
 * and the registry's timestamps (`2027-01-31T00:00:00Z`), written and read.
 */

/**
 * A flat copy of a string. A slice of 13 or more characters is a view that keeps the
 * whole string it was cut from alive (for a key id: the request's Authorization
 * header), which matters for strings held as long as a cache entry.
 */
export function flatCopy (text: string): string {
  if (text.length < 13) return text
  const copy = Buffer.from(text, 'utf8').toString('utf8')
  // (a lone surrogate does not survive UTF-8: then the view is kept, never a different string)
  return copy === text ? copy : text
}

/** epoch ms -> the registry's timestamp form, `2027-01-31T00:00:00Z` (UTC, whole seconds). */
export function isoTimestamp (ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/

/** ISO 8601 with a time and a zone (`2027-01-31T00:00:00Z`) -> epoch ms. */
export function parseTimestamp (text: string): number | undefined {
  if (!ISO_8601.test(text)) return undefined
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? undefined : ms
}
