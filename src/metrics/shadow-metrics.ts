/**
 * `keygate_shadow_decisions_total{rule,live,shadow}`: requests whose shadow rules
 * (`shadow_rules`, docs/safe-change.md) answer otherwise than the live rules. `rule` is
 * the shadow rule's index (`none`: no shadow rule matched); `live` and `shadow` are
 * `allow` or the refusal's reason. Only differences are counted: every label set is a
 * (rule, outcome, outcome) triple, so the series are bounded by the rules.
 */
import type { Registrar } from './registrar.js'

export interface ShadowMeter {
  difference: (rule: string, live: string, shadow: string) => void
}

export function shadowMetrics (r: Registrar): ShadowMeter {
  const counts = new Map<string, { labels: { rule: string, live: string, shadow: string }, n: number }>()
  r.counter({
    name: 'keygate_shadow_decisions_total',
    help: 'Requests the shadow rules (shadow_rules) would answer otherwise than the live rules: by the shadow ' +
      'rule (its index, or "none"), the live outcome and the shadow outcome ("allow" or the refusal\'s reason). ' +
      'The live answer is the one given.',
    labelNames: ['rule', 'live', 'shadow'],
    collect () {
      this.reset()
      for (const { labels, n } of counts.values()) this.inc(labels, n)
    }
  })
  return {
    difference (rule, live, shadow) {
      const id = `${rule}|${live}|${shadow}`
      const entry = counts.get(id)
      if (entry === undefined) counts.set(id, { labels: { rule, live, shadow }, n: 1 })
      else entry.n++
    }
  }
}
