/**
 * The rules' grammar, checked with the configuration: a pattern's segments, an
 * `org_param` that is one of its parameters, a method node can receive, and no two
 * rules for the same method and the same pattern (parameter names aside), which
 * would be ambiguous. src/decision/match-rule.ts compiles what passes.
 */
import { METHODS } from 'node:http'
import type { RuleConfig } from './schema.js'

/** Every method the gateway can receive (node's parser only knows these); CONNECT never routes. */
export const PROXIED_METHODS: readonly string[] = METHODS.filter((m) => m !== 'CONNECT')

const PARAM = /^:[A-Za-z_][A-Za-z0-9_]*$/
const STATIC_SEGMENT = /^([A-Za-z0-9._~!$&'()+,=@-]|%[0-9A-F]{2})+$/

/**
 * Whether a path is served by a route prefix: the prefix itself, or below it segment-wise (`/api/v1x` is not under
 * `/api/v1`).
 */
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
export function patternShape (path: string): { shape: string, params: string[] } | string {
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
 * Every problem of the rules, each naming its rule (`rules[2].method: ...`), with the
 * allowed values where there is a fixed set. A rule left out of the array (a hole: the
 * schema refused it) is skipped, and the others keep their indexes.
 */
export function ruleProblems (rules: readonly RuleConfig[], methods: readonly string[] = PROXIED_METHODS): string[] {
  const problems: string[] = []
  // (method, shape) -> the first rule's index, per tier: explicit methods, and `*`
  const explicit = new Map<string, number>()
  const wildcard = new Map<string, number>()
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
    if (r.public === true && (r.permissions.length > 0 || r.org_param !== undefined)) {
      problems.push(
        `${field}.public: a public rule lets requests through without a key, so it takes no permissions or org_param`
      )
      return
    }
    if (r.method !== '*' && !methods.includes(r.method)) {
      problems.push(`${field}.method: unknown HTTP method "${r.method}" (one of ${methods.join(', ')}, or *)`)
      return
    }
    const tier = r.method === '*' ? wildcard : explicit
    const id = `${r.method} ${shape.shape}`
    const clash = tier.get(id)
    if (clash !== undefined) {
      problems.push(`${field}: ambiguous with rules[${clash}] (both match ${r.method} ${r.path})`)
      return
    }
    tier.set(id, index)
  })
  return problems
}
