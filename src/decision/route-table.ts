/**
 * The route prefix stage: which route, and so which upstream, a path (and its Host)
 * belongs to. A prefix covers itself and everything under it (`<prefix>` and
 * `<prefix>/*`); a route with `hosts` serves only those names (exact, or `*.example.com`
 * for any name below example.com). The most specific route wins: the longest prefix,
 * then, on the same prefix, an exact host over a wildcard (the longer suffix first) over
 * none. A path under none gets 404.
 *
 * Without hosts the data plane registers these patterns with fastify's router
 * (find-my-way, with ROUTER_OPTIONS), and this table is a find-my-way router built
 * from the same patterns and options, so both pick the same route for every path. With
 * hosts the data plane asks this table (src/data-plane/host-routes.ts).
 *
 * Each route also says what is forwarded (route-rewrite.ts) and where its key may
 * travel (`key_header`).
 */
import FindMyWay from 'find-my-way'
import type { RouteConfig } from '../config/schema.js'
import { pathRewrite } from './route-rewrite.js'

/** The data plane's router options (fastify's `routerOptions`). */
export const ROUTER_OPTIONS = {
  caseSensitive: true,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false,
  maxParamLength: 2048
} as const

/** A route, compiled once. */
export interface Route extends Readonly<RouteConfig> {
  /** its index in `routes` */
  readonly index: number
  /** `key_header` in lower case; undefined: the key travels in `Authorization` only */
  readonly keyHeader: string | undefined
  /** the path forwarded for a decided path under the route; undefined: the decided path itself */
  readonly rewrite: ((path: string) => string) | undefined
}

export interface RouteTable {
  readonly routes: readonly Route[]
  /** whether any route names hosts (then the Host header takes part in the match) */
  readonly byHost: boolean
  /** the route a (policy-checked) path and its Host header fall under; undefined: none (404) */
  readonly routeOf: (path: string, host?: string | undefined) => Route | undefined
}

/**
 * The router patterns of one prefix: the prefix itself, and everything under it (`<prefix>/*` also matches
 * `<prefix>/`).
 */
export function routePatterns (prefix: string): string[] {
  return [prefix, prefix === '/' ? '/*' : `${prefix}/*`]
}

export function compileRoute (config: RouteConfig, index: number): Route {
  return Object.freeze({
    ...config,
    index,
    keyHeader: config.key_header?.toLowerCase(),
    rewrite: pathRewrite(config)
  })
}

/** The routes, compiled; `reserved`: a prefix of the gateway's own (self_service.prefix), under no route. */
export function compileRouteTable (configs: readonly RouteConfig[], reserved?: string): RouteTable {
  const table = compileRoutes(configs)
  if (reserved === undefined) return table
  // the gateway's own paths (self_service.prefix): under no route, whatever a route `/` says, so that no front end
  // (a WebSocket upgrade, the authorizers) ever hands one to an upstream
  const under = reserved + '/'
  const { routeOf } = table
  const own = (path: string): boolean => path === reserved || path.startsWith(under)
  return { ...table, routeOf: (path, host) => own(path) ? undefined : routeOf(path, host) }
}

function compileRoutes (configs: readonly RouteConfig[]): RouteTable {
  const routes = Object.freeze(configs.map(compileRoute))
  const anyHost = routerOf(routes.filter((r) => r.hosts === undefined))
  const byHost = routes.some((r) => r.hosts !== undefined)
  if (!byHost) return { routes, byHost, routeOf: anyHost }

  // one router per exact name, one per wildcard suffix (longest first), one for any host
  const exact = new Map<string, (path: string) => Route | undefined>()
  const wildcards: Array<{ suffix: string, routeOf: (path: string) => Route | undefined }> = []
  const named = new Map<string, Route[]>()
  for (const r of routes) {
    for (const host of r.hosts ?? []) {
      const name = host.toLowerCase()
      named.set(name, [...named.get(name) ?? [], r])
    }
  }
  for (const [name, list] of named) {
    if (name.startsWith('*.')) wildcards.push({ suffix: name.slice(1), routeOf: routerOf(list) })
    else exact.set(name, routerOf(list))
  }
  wildcards.sort((a, b) => b.suffix.length - a.suffix.length)

  return {
    routes,
    byHost,
    routeOf (path, host) {
      const name = host === undefined ? '' : hostName(host)
      // the candidates in order of host specificity; the longest prefix wins, the first on a tie
      let best = name === '' ? undefined : exact.get(name)?.(path)
      if (name !== '') {
        for (const w of wildcards) {
          if (!name.endsWith(w.suffix)) continue
          best = longer(best, w.routeOf(path))
        }
      }
      return longer(best, anyHost(path))
    }
  }
}

/** The name a Host header gives: lower case, without its port or a trailing dot; '' when it is no host name. */
export function hostName (host: string): string {
  let name = host
  if (name.startsWith('[')) return '' // an IPv6 literal: no route names one
  const colon = name.indexOf(':')
  if (colon !== -1) name = name.slice(0, colon)
  if (name.endsWith('.')) name = name.slice(0, -1)
  return HOST.test(name) ? name.toLowerCase() : ''
}

const HOST = /^[A-Za-z0-9.-]{1,253}$/

/** `a`, unless `b` has a longer prefix (a tie keeps `a`, the more specific host). */
function longer (a: Route | undefined, b: Route | undefined): Route | undefined {
  if (a === undefined) return b
  if (b === undefined) return a
  return b.prefix.length > a.prefix.length ? b : a
}

function routerOf (routes: readonly Route[]): (path: string) => Route | undefined {
  const router = FindMyWay(ROUTER_OPTIONS)
  for (const route of routes) {
    for (const pattern of routePatterns(route.prefix)) router.on('GET', pattern, () => {}, route)
  }
  return (path) => (router.find('GET', path)?.store as Route | null | undefined) ?? undefined
}
