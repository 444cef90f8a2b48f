/**
 * What a key or org record says of its allowance (docs/quotas.md): `quota`
 * (`<count>/<day|week|month>`), `credits` (the units granted in all; what is spent is
 * counted apart, src/quota/), and on a key record `meter`, the key whose count it
 * continues (set by a rotation; absent: its own). Parsed once when the record enters
 * the cache, shared by text.
 */
import { MALFORMED, recordCredits, recordQuota, type RecordCredits, type RecordQuota } from '../config/quota.js'

export interface RecordMeter {
  readonly quota: RecordQuota
  readonly credits: RecordCredits
  /** key records: the key id whose count this key continues; undefined: the key's own */
  readonly continues: string | undefined
}

type Field = string | null | undefined

/** a key id as keygate makes one (key-format.ts) or an imported key gets one */
const METER_ID = /^[A-Za-z0-9_-]{1,64}$/

const shared = new Map<string, RecordMeter>()
const SHARED_MAX = 1000

/** The fields -> the allowance; undefined when the record sets neither a quota nor credits. */
export function recordMeter (quota: Field, credits: Field, meter?: Field): RecordMeter | undefined {
  const q = recordQuota(quota)
  const c = recordCredits(credits)
  if (q === undefined && c === undefined) return undefined
  const continues = meter == null || meter === '' ? undefined : meter
  // a `meter` that names no key: the key's allowance allows nothing (fail closed)
  const bad = continues !== undefined && !METER_ID.test(continues)
  if (continues === undefined) {
    const text = `${quota ?? ''}|${credits ?? ''}`
    const known = shared.get(text)
    if (known !== undefined) return known
    const made: RecordMeter = Object.freeze({ quota: q, credits: c, continues })
    if (shared.size >= SHARED_MAX) shared.clear()
    shared.set(text, made)
    return made
  }
  return Object.freeze({ quota: bad ? MALFORMED : q, credits: c, continues: bad ? undefined : continues })
}
