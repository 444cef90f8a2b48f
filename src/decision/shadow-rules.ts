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
import type { ShadowNote } from './verdict.js'

export type { ShadowNote } from './verdict.js'

/** The difference for one request, or undefined when both rule sets agree. */
export type ShadowDecider = (identity: Identity, method: string, path: string) => ShadowNote | undefined

export function createShadowDecider (live: RuleMatcher, shadow: RuleMatcher): ShadowDecider {
  return (identity, method, path) => {
    const liveMay = authorize(identity, live(method, path))
    const match = shadow(method, path)
    const shadowMay = authorize(identity, match)
    const liveOutcome = liveMay.ok ? 'allow' : liveMay.reason
    const shadowOutcome = shadowMay.ok ? 'allow' : shadowMay.reason
    if (liveOutcome === shadowOutcome) return undefined
    return { rule: match === null ? 'none' : String(match.rule.index), live: liveOutcome, shadow: shadowOutcome }
  }
}
