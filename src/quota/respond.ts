/**
 * A metered request's response headers (docs/quotas.md), modelled on the IETF
 * `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers):
 * one list item per allowance that applies, named `key-quota`, `key-credits`,
 * `org-quota`, `org-credits`.
 *
 *   RateLimit-Policy: "key-quota";q=1000;w=2592000, "org-credits";q=50000
 *   RateLimit: "key-quota";r=12;t=86400, "org-credits";r=4100
 *
 * `q` the quota's count (credits: what was granted in all), `w` its period in seconds,
 * `r` the units left after this request, `t` the seconds to the next refill. Refused
 * with 429 `quota_exceeded`: `Retry-After` to that refill, when one is due (none when
 * credits ran out: only an admin adds to them).
 */
import type { QuotaVerdict } from './meter.js'

/** The headers of a verdict, lower case (undefined: none apply). */
export function quotaHeaders (v: QuotaVerdict | undefined): Record<string, string> | undefined {
  if (v === undefined || (!v.allowed && v.reason === 'quota_unavailable')) return undefined
  if (v.allowances.length === 0) return undefined
  const policy: string[] = []
  const state: string[] = []
  for (const a of v.allowances) {
    policy.push(`"${a.name}";q=${a.limit}${a.windowS === undefined ? '' : `;w=${a.windowS}`}`)
    state.push(`"${a.name}";r=${a.remaining}${a.resetS === undefined ? '' : `;t=${a.resetS}`}`)
  }
  const headers: Record<string, string> = { 'ratelimit-policy': policy.join(', '), ratelimit: state.join(', ') }
  if (!v.allowed && v.retryAfterS !== undefined) headers['retry-after'] = String(v.retryAfterS)
  return headers
}
