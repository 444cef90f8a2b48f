/**
 * Who is calling, as the decision establishes it: what every front end forwards
 * (identity headers, the signed assertion), logs, rate-limits and re-checks.
 */
import type { RecordLimit } from '../config/rate-limit.js'
import type { AddressList, Grants, KeyRestriction, Meta, RecordMeter } from '../registry/records.js'

export interface Identity {
  keyId: string
  type: 'personal' | 'bot'
  userId: string | undefined
  org: string
  /** `test`: a test key, whose requests go to a route's `test_upstream` only (docs/test-keys.md) */
  env?: 'live' | 'test' | undefined
  /** the effective role's name: the key's (BOT) or its user's (personal) */
  role: string
  /** what the key may do: its effective role's grants, narrowed by its scope when it has one (scopedGrants) */
  grants: Grants
  /** the key's `scope`; undefined: none (then `grants` are the role's) */
  scope?: Grants | undefined
  /** the effective role's own grants, before the scope (`keygate check` names which refused) */
  roleGrants?: Grants | undefined
  /** the key's `allowed_cidrs`; undefined: any client address */
  addresses?: AddressList | undefined
  /** the restriction tried on the key, never enforced (shadow-restriction.ts); undefined (most keys): none */
  shadowRestriction?: KeyRestriction | undefined
  /** when the key expires (epoch ms); undefined: never (an open WebSocket is closed then: src/websocket/) */
  expiresAt?: number | undefined
  /** the rate limits of the key, its role and its org, as their records hold them (src/ratelimit/) */
  keyLimit?: RecordLimit
  roleLimit?: RecordLimit
  orgLimit?: RecordLimit
  /** the quota and credits of the key and of its org (src/quota/, docs/quotas.md); undefined: none */
  keyMeter?: RecordMeter | undefined
  orgMeter?: RecordMeter | undefined
  /** the identity a BOT key names (docs/identities.md): its id, and its `external_id` (`<prefix>Identity`) */
  identityId?: string | undefined
  externalId?: string | undefined
  /** its rate limit and allowance, shared by every key of the identity */
  identityLimit?: RecordLimit
  identityMeter?: RecordMeter | undefined
  /** the key's `meta` over its identity's (`<prefix>Meta`, the assertion's `meta` claim); undefined: neither */
  meta?: Meta | undefined
}
