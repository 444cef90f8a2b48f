/**
 * `leaks`: leaked keys reported by secret scanners and by anyone who found one
 * (docs/leaks.md). Part of the configuration schema (schema.ts).
 */
import { Type } from '@sinclair/typebox'
import { RATE_LIMIT_PATTERN } from './rate-limit.js'

export const LeaksSchema = Type.Object({
  github: Type.Object({
    /** GitHub's secret scanning public keys, as GitHub lists them (`{"public_keys":[...]}`) */
    keys_url: Type.String({ pattern: '^https?://[^/?#@]+(/[^#]*)?$', default: 'https://api.github.com/meta/public_keys/secret_scanning', description: 'an http:// or https:// URL without credentials or fragment' }),
    /** how long fetching the key list may take */
    fetch_timeout_ms: Type.Integer({ minimum: 100, maximum: 60_000, default: 5_000 })
  }, { additionalProperties: false, default: {} }),
  /** `POST /_keygate/v1/leaked` on the data plane: reports from anyone, without a credential */
  public: Type.Object({
    /** false: the path is no route of the gateway's (404, or a route's like any other path) */
    enabled: Type.Boolean({ default: true }),
    /** reports per client address, per instance; one past it is answered the same and does nothing */
    per_address: Type.String({
      pattern: RATE_LIMIT_PATTERN, default: '10/1m', description: 'a rate limit <count>/<period>, like 10/1m'
    }),
    /** keys waiting to be looked up, at most, over all reports; a report past it is answered the same and dropped */
    max_pending: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 })
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false, default: {} })
