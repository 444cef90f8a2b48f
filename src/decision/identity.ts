/**
 * Who is calling, as the decision establishes it: what every front end forwards
 * (identity headers, the signed assertion), logs, rate-limits and re-checks.
 */
import type { RecordLimit } from '../ratelimit/limit.js'
import type { Grants } from '../registry/records.js'

export interface Identity {
  keyId: string
  type: 'personal' | 'bot'
  userId: string | undefined
  org: string
  /** the effective role's name: the key's (BOT) or its user's (personal) */
  role: string
  grants: Grants
  /** when the key expires (epoch ms); undefined: never (an open WebSocket is closed then: src/websocket/) */
  expiresAt?: number | undefined
  /** the rate limits of the key, its role and its org, as their records hold them (src/ratelimit/) */
  keyLimit?: RecordLimit
  roleLimit?: RecordLimit
  orgLimit?: RecordLimit
}
