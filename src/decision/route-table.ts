/**
 * The route prefix stage: which route prefix, and so which upstream, a path belongs to. A prefix
 * covers itself and everything under it (`<prefix>` and `<prefix>/*`); a path under
 * none gets 404. The data plane registers these patterns with fastify's router
 * (find-my-way, with ROUTER_OPTIONS); `keygate check` asks a find-my-way router built
 * from the same patterns and options, so both pick the same route for every path.
 */
import FindMyWay from 'find-my-way'
import type { RouteConfig } from '../config/schema.js'

/** The data plane's router options (fastify's `routerOptions`). */
export const ROUTER_OPTIONS = { caseSensitive: true, ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: 2048 } as const

/** The router patterns of one prefix: the prefix itself, and everything under it (`<prefix>/*` also matches `<prefix>/`). */
export function routePatterns (prefix: string): string[] {
  return [prefix, prefix === '/' ? '/*' : `${prefix}/*`]
}

/** The route a (policy-checked) path falls under, as the data plane's router decides; undefined: none (404). */
export function compileRouteTable (routes: readonly RouteConfig[]): (path: string) => RouteConfig | undefined {
  const router = FindMyWay(ROUTER_OPTIONS)
  for (const route of routes) {
    for (const pattern of routePatterns(route.prefix)) router.on('GET', pattern, () => {}, route)
  }
  return (path) => (router.find('GET', path)?.store as RouteConfig | null | undefined) ?? undefined
}
