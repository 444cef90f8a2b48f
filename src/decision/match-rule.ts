/**
 * The authorize stage's rule match: method + path pattern -> required permissions.
 *
 * Rules compile once at start-up into a find-my-way router (fastify's own), so the
 * precedence is the router's: per segment, static beats `:param` beats `*`. On the
 * same pattern, an explicit method beats a `GET` rule serving `HEAD`, which beats `*`.
 * Two rules for the same method and the same pattern (parameter names aside) are
 * ambiguous: a configuration error, reported with both rule indexes.
 */
import FindMyWay from 'find-my-way'
import { patternShape, RuleError, ruleProblems } from '../config/rule-patterns.js'
import type { RuleConfig } from '../config/schema.js'

export { isUnderPrefix, RuleError } from '../config/rule-patterns.js'

export interface CompiledRule {
  index: number
  method: string
  path: string
  permissions: readonly string[]
  /** `scope` attribute of the 403 challenge (the permissions, space-separated). */
  scope: string
  orgParam: string | undefined
  /** `public: true`: a request without a credential passes it anonymously (public-access.ts) */
  public: boolean
  /** the units a request spends of its quota and credits (docs/quotas.md); `upstream`: the response says */
  cost: number | 'upstream'
  /** `cost: upstream` without the header in the response */
  defaultCost: number
}

export interface RuleMatch {
  rule: CompiledRule
  params: Record<string, string | undefined>
}

export type RuleMatcher = (method: string, path: string) => RuleMatch | null

/**
 * Compiles the rules; RuleError with every problem (config/rule-patterns.ts) when they
 * do not check. `methods`: every method a request can have (src/http/methods.ts); `*`
 * stands for each of them.
 */
export function compileRules (rules: readonly RuleConfig[], methods: readonly string[]): RuleMatcher {
  const problems = ruleProblems(rules, methods)
  if (problems.length > 0) throw new RuleError(problems)
  const router = FindMyWay<FindMyWay.HTTPVersion.V1>({
    caseSensitive: true,
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
    maxParamLength: 2048
  })

  // (method, shape) -> rule, in three tiers of precedence on an identical shape
  const explicit = new Map<string, CompiledRule>()
  const wildcard = new Map<string, CompiledRule>()
  const shapes = new Set<string>()

  rules.forEach((r, index) => {
    const shape = patternShape(r.path) as { shape: string }
    const compiled: CompiledRule = {
      index,
      method: r.method,
      path: r.path,
      permissions: Object.freeze([...r.permissions]),
      scope: r.permissions.join(' '),
      orgParam: r.org_param,
      public: r.public === true,
      cost: r.cost ?? 1,
      defaultCost: r.default_cost ?? 1
    }
    const tier = r.method === '*' ? wildcard : explicit
    tier.set(`${r.method} ${shape.shape}`, compiled)
    shapes.add(shape.shape)
  })

  for (const shape of shapes) {
    for (const method of methods) {
      const rule = explicit.get(`${method} ${shape}`) ??
        (method === 'HEAD' ? explicit.get(`GET ${shape}`) : undefined) ??
        wildcard.get(`* ${shape}`)
      if (rule === undefined) continue
      // find-my-way keeps one tree per method, so each rule keeps its own parameter names.
      router.on(method as FindMyWay.HTTPMethod, rule.path, noop, rule)
    }
  }

  return function matchRule (method, path) {
    const found = router.find(method as FindMyWay.HTTPMethod, path)
    if (found === null) return null
    return { rule: found.store as CompiledRule, params: found.params }
  }
}

function noop (): void {}
