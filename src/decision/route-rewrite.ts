/**
 * What a route forwards (docs/routing.md, "Rewriting"): `strip_prefix: true` removes the
 * route's prefix, `rewrite_prefix: /v2` replaces it. Pure.
 *
 * The input is always the decided path: the one the target policy (target-policy.ts)
 * checked and decoded, which the rules were matched against, never the raw target. It
 * is under the route's prefix at a segment boundary, so what follows the prefix is
 * empty or starts with `/`; the prefixes hold no dot segment (config/routes.ts), so the
 * result passes the target policy unchanged: no dot segment, no empty segment, nothing
 * an upstream could decode into a separator.
 */
import type { RouteConfig } from '../config/schema.js'

/** The rewrite of a route; undefined when it forwards the decided path as it is. */
export function pathRewrite (
  route: Pick<RouteConfig, 'prefix' | 'strip_prefix' | 'rewrite_prefix'>
): ((path: string) => string) | undefined {
  const to = route.rewrite_prefix ?? (route.strip_prefix === true ? '/' : undefined)
  if (to === undefined || to === route.prefix) return undefined
  // the part of the path after the prefix: '' for the prefix itself, else `/...`
  const cut = route.prefix === '/' ? 0 : route.prefix.length
  if (to === '/') return (path) => path.length === cut ? '/' : path.slice(cut)
  return (path) => path.length === cut || path === '/' ? to : to + path.slice(cut)
}
