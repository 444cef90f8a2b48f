/**
 * `keygate:identity:<id>` (docs/identities.md): one customer of a team, in one org, whose
 * BOT keys share its rate limit, its quota and credits and its `meta`. Parsed once, when
 * it enters the cache. Anything unexpected (no org, an `external_id` no admin front end
 * would write, a `meta` that is not a small JSON object) parses to INVALID: the keys that
 * name the identity are refused, never served without its limits.
 */
import { recordLimit, type RecordLimit } from '../config/rate-limit.js'
import { INVALID, type Invalid } from './invalid.js'
import { parseMeta, type Meta } from './meta.js'
import { recordMeter, type RecordMeter } from './meter-fields.js'

export interface IdentityRecord {
  org: string
  /** the customer's id in the team's own system, unique in the org: `<prefix>Identity` upstream */
  externalId: string
  meta: Meta | undefined
  /** one bucket shared by every key of the identity */
  rateLimit: RecordLimit
  /** one balance for every key of the identity; absent: neither a quota nor credits */
  meter?: RecordMeter
}

/** An identity's id, as every admin front end writes it (a key record's `identity` names one). */
export const IDENTITY_ID = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$/

/**
 * An `external_id`: printable ASCII without spaces, at most 256 characters. It becomes a
 * header value (`<prefix>Identity`), so it never holds a control character.
 */
export const EXTERNAL_ID = /^[\x21-\x7e]{1,256}$/

/** The fields the gateway reads of an identity record, in the order the registry read returns them. */
export const IDENTITY_FIELDS = ['org', 'external_id', 'meta', 'rate_limit', 'quota', 'credits'] as const

const ORG_NAME = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$/

type Field = string | null | undefined

/** An identity record from its fields (HGETALL's object form). */
export function parseIdentityRecord (f: Record<string, string>): IdentityRecord | Invalid {
  return identityRecordOf(f.org, f.external_id, f.meta, f.rate_limit, f.quota, f.credits)
}

/** An identity record from its IDENTITY_FIELDS, in order: the one set of rules for identity records. */
export function identityRecordOf (
  org: Field, externalId: Field, meta: Field, rateLimit: Field, quota: Field, credits: Field
): IdentityRecord | Invalid {
  if (org == null || !ORG_NAME.test(org)) return INVALID
  if (externalId == null || !EXTERNAL_ID.test(externalId)) return INVALID
  const parsed = parseMeta(meta)
  if (parsed === INVALID) return INVALID
  const record: IdentityRecord = { org, externalId, meta: parsed, rateLimit: recordLimit(rateLimit ?? undefined) }
  const m = recordMeter(quota, credits)
  if (m !== undefined) record.meter = m
  return record
}
