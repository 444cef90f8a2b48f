/**
 * Shadow rules (`shadow_rules`, docs/safe-change.md): a whole rule set in the grammar of
 * `rules`, decided beside the live rules for every authenticated request by the same
 * authorization (stages/authorize.ts), never changing the answer. Where the two would
 * answer differently, the difference is noted on the verdict (the log line's `shadow`
 * field) and counted (`keygate_shadow_decisions_total`). Built only when shadow rules
 * are configured: without them the decision holds no shadow and pays one comparison.
 */
import type { Identity } from './identity.js'
import type { RuleMatcher } from './match-rule.js'
import { authorize } from './stages/authorize.js'
import type { ShadowNote, Verdict } from './verdict.js'

export type { ShadowNote } from './verdict.js'

/**
 * The difference for one request, or undefined when both rule sets agree. `verdict`: the
 * live decision, whose authorization outcome is read from it when the rules decided it
 * (allowed, or refused by them), so the live rules are not matched twice.
 */
export type ShadowDecider = (
  identity: Identity, method: string, path: string, verdict: Verdict
) => ShadowNote | undefined

const BY_RULES = new Set<string>(['no_rule', 'org_mismatch', 'missing_permission'])

export function createShadowDecider (live: RuleMatcher, shadow: RuleMatcher): ShadowDecider {
  return (identity, method, path, verdict) => {
    let liveOutcome: string
    if (verdict.ok) liveOutcome = 'allow'
    else if (BY_RULES.has(verdict.reason)) liveOutcome = verdict.reason
    else {
      // refused before or after the rules (an address, a rate limit): what the rules alone say
      const liveMay = authorize(identity, live(method, path))
      liveOutcome = liveMay.ok ? 'allow' : liveMay.reason
    }
    const match = shadow(method, path)
    const shadowMay = authorize(identity, match)
    const shadowOutcome = shadowMay.ok ? 'allow' : shadowMay.reason
    if (liveOutcome === shadowOutcome) return undefined
    return { rule: match === null ? 'none' : String(match.rule.index), live: liveOutcome, shadow: shadowOutcome }
  }
}
