/**
 * The routes' checks across fields (docs/routing.md): each route names a defined
 * upstream; no two routes share a prefix and a host; a prefix (and a rewrite) holds no
 * segment the path policy refuses, so it can match and what is forwarded passes it
 * too; strip and rewrite are not both set; a key header is not a header the gateway
 * reads or sets itself. src/decision/route-table.ts compiles what passes.
 */
import type { RouteConfig } from './schema.js'

/** Headers a route's `key_header` may not name: the gateway reads or sets them itself. */
const RESERVED_HEADERS = new Set([
  'authorization', 'proxy-authorization', 'host', 'cookie', 'content-length', 'content-type', 'transfer-encoding',
  'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect', 'x-request-id',
  'traceparent', 'tracestate', 'forwarded'
])

/** A prefix's segments as the path policy sees them: none `.` or `..`, none starting or ending with `..`. */
export function prefixProblem (prefix: string): string | undefined {
  if (prefix === '/') return undefined
  for (const segment of prefix.split('/').slice(1)) {
    if (segment === '.' || segment.startsWith('..') || segment.endsWith('..')) {
      return `${prefix} holds the segment "${segment}", which the path policy refuses in every request`
    }
  }
  return undefined
}

/** Every problem of the routes, each naming its field (`routes[1].hosts[0]: ...`). */
export function routeProblems (
  routes: readonly RouteConfig[],
  upstreams: Record<string, unknown>,
  identityPrefix: string
): string[] {
  const problems: string[] = []
  const seen = new Map<string, number>()
  const identity = identityPrefix.toLowerCase()
  routes.forEach((r, i) => {
    const field = `routes[${i}]`
    if (upstreams[r.upstream] === undefined) {
      const names = Object.keys(upstreams)
      problems.push(`${field}.upstream: no upstream named "${r.upstream}" in upstreams ` +
        `(${names.length === 0 ? 'none is defined' : `defined: ${names.join(', ')}`})`)
    }
    if (r.test_upstream !== undefined && upstreams[r.test_upstream] === undefined) {
      problems.push(`${field}.test_upstream: no upstream named "${r.test_upstream}" in upstreams`)
    }
    const bad = prefixProblem(r.prefix)
    if (bad !== undefined) problems.push(`${field}.prefix: ${bad}`)
    for (const host of r.hosts ?? ['']) {
      const id = `${r.prefix} ${host.toLowerCase()}`
      const other = seen.get(id)
      if (other === undefined) {
        seen.set(id, i)
      } else if (host === '') {
        problems.push(`${field}.prefix: ${r.prefix} is listed twice (routes[${other}] too), both for any host`)
      } else {
        problems.push(`${field}.hosts: ${r.prefix} for host ${host} is listed twice (routes[${other}] too)`)
      }
    }
    if (r.strip_prefix === true && r.rewrite_prefix !== undefined) {
      problems.push(`${field}: strip_prefix and rewrite_prefix both set; ` +
        'use rewrite_prefix alone (strip_prefix is rewrite_prefix: /)')
    }
    if (r.rewrite_prefix !== undefined) {
      const badRewrite = prefixProblem(r.rewrite_prefix)
      if (badRewrite !== undefined) problems.push(`${field}.rewrite_prefix: ${badRewrite}`)
    }
    if (r.key_header !== undefined) {
      const name = r.key_header.toLowerCase().replace(/_/g, '-')
      if (RESERVED_HEADERS.has(name) || name.startsWith('x-forwarded-') || name.startsWith(identity)) {
        problems.push(`${field}.key_header: ${r.key_header} is a header the gateway reads or sets itself; ` +
          'name another, like X-API-Key or apikey')
      }
    }
  })
  return problems
}

/**
 * The self-service prefix (docs/self-service.md) is the gateway's own: a route whose prefix is it, lies under it,
 * or lies between `/` and it would claim its paths for an upstream. `/` itself is no self-service prefix.
 */
export function selfServiceProblems (
  routes: readonly RouteConfig[], selfService: { enabled: boolean, prefix: string }
): string[] {
  if (!selfService.enabled) return []
  const own = selfService.prefix
  if (own === '/') {
    return ['self_service.prefix: / would take every path from the routes; name a prefix like /_keygate/v1']
  }
  const under = (path: string, prefix: string): boolean => path === prefix || path.startsWith(prefix + '/')
  return routes.flatMap((r, i) => under(r.prefix, own) || (r.prefix !== '/' && under(own, r.prefix))
    ? [`routes[${i}].prefix: ${r.prefix} claims the self-service prefix ${own} (self_service.prefix), never forwarded`]
    : [])
}
