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
import type { RuleConfig } from '../config/schema.js'

export interface CompiledRule {
  index: number
  method: string
  path: string
  permissions: readonly string[]
  /** `scope` attribute of the 403 challenge (the permissions, space-separated). */
  scope: string
  orgParam: string | undefined
}

export interface RuleMatch {
  rule: CompiledRule
  params: Record<string, string | undefined>
}

export type RuleMatcher = (method: string, path: string) => RuleMatch | null

const PARAM = /^:[A-Za-z_][A-Za-z0-9_]*$/
const STATIC_SEGMENT = /^([A-Za-z0-9._~!$&'()+,=@-]|%[0-9A-F]{2})+$/

/** Whether a path is served by a route prefix: the prefix itself, or below it segment-wise (`/api/v1x` is not under `/api/v1`). */
export function isUnderPrefix (prefix: string, path: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(prefix + '/')
}

export class RuleError extends Error {
  override readonly name = 'RuleError'
  constructor (readonly problems: string[]) {
    super(problems.join('\n'))
  }
}

/** Checks one pattern; returns its shape with parameter names erased, or a problem. */
function patternShape (path: string): { shape: string, params: string[] } | string {
  const segments = path.split('/').slice(1)
  const params: string[] = []
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i] as string
    if (s === '*') {
      if (i !== segments.length - 1) return '`*` may only be the last segment'
    } else if (s.startsWith(':')) {
      if (!PARAM.test(s)) return `invalid parameter segment "${s}"`
      if (params.includes(s.slice(1))) return `parameter "${s}" appears twice`
      params.push(s.slice(1))
    } else if (s === '' && i === segments.length - 1 && i > 0) {
      // trailing slash: a distinct path, as for the router
    } else if (!STATIC_SEGMENT.test(s) || s === '.' || s === '..') {
      return `invalid segment "${s}" (use letters, digits, -._~!$&'()+,=@ or %XX; no empty or dot segments)`
    }
  }
  return { shape: segments.map((s) => s.startsWith(':') ? ':' : s).join('/'), params }
}

/**
 * `methods`: every method a request can have (the listener's: src/http/methods.ts); a
 * rule naming another is a configuration error, and `*` stands for each of them.
 */
export function compileRules (rules: readonly RuleConfig[], methods: readonly string[]): RuleMatcher {
  const problems: string[] = []
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
    const field = `rules[${index}]`
    const shape = patternShape(r.path)
    if (typeof shape === 'string') {
      problems.push(`${field}.path: ${shape}`)
      return
    }
    if (r.org_param !== undefined && !shape.params.includes(r.org_param)) {
      problems.push(`${field}.org_param: "${r.org_param}" is not a parameter of path ${r.path}`)
      return
    }
    if (r.method !== '*' && !methods.includes(r.method)) {
      problems.push(`${field}.method: unknown HTTP method "${r.method}"`)
      return
    }
    const compiled: CompiledRule = {
      index,
      method: r.method,
      path: r.path,
      permissions: Object.freeze([...r.permissions]),
      scope: r.permissions.join(' '),
      orgParam: r.org_param
    }
    const tier = r.method === '*' ? wildcard : explicit
    const id = `${r.method} ${shape.shape}`
    const clash = tier.get(id)
    if (clash !== undefined) {
      problems.push(`${field}: ambiguous with rules[${clash.index}] (both match ${r.method} ${r.path})`)
      return
    }
    tier.set(id, compiled)
    shapes.add(shape.shape)
  })
  if (problems.length > 0) throw new RuleError(problems)

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
