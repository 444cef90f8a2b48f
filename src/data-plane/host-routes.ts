/**
 * The route prefix stage on the data plane when routes name `hosts` (docs/routing.md):
 * fastify's router alone cannot rank a host over none and the longest prefix first, so
 * the route table (src/decision/route-table.ts) picks the route from the decided path
 * and the Host header, in the URL rewrite, and each route's handlers are found by that
 * choice: a find-my-way constraint whose value is the route's index. Without hosts none
 * of this runs: each route registers its prefix's patterns, as the table's router does.
 */
import type { IncomingMessage } from 'node:http'
import type { RouteOptions } from 'fastify'
import type FindMyWay from 'find-my-way'
import type { ConstraintStrategy, HTTPVersion } from 'find-my-way'
import { routePatterns, type Route, type RouteTable } from '../decision/route-table.js'

const kRoute = Symbol('keygate.route')
type RoutedMessage = IncomingMessage & { [kRoute]?: string }

const CONSTRAINT = 'keygateRoute'
type Handler = FindMyWay.Handler<HTTPVersion.V1>
/** no route for this path and host: a value no route registers, so the router answers 404 */
const NONE = '-'

/** find-my-way's constraint strategy: the route the table chose for the request. */
export const routeConstraint: ConstraintStrategy<HTTPVersion.V1, string> = {
  name: CONSTRAINT,
  storage () {
    const handlers = new Map<string, Handler>()
    return {
      get: (value: string) => handlers.get(value) ?? null,
      set: (value: string, store: Handler) => { handlers.set(value, store) }
    }
  },
  deriveConstraint: (req) => (req as RoutedMessage)[kRoute] ?? NONE,
  mustMatchWhenDerived: true,
  validate (value: unknown) {
    if (typeof value !== 'string') throw new TypeError('a route index')
  }
}

/** In the URL rewrite: the route the table chooses for a decided path and the request's Host. */
export function chooseRoute (table: RouteTable, ids: readonly string[], req: IncomingMessage, path: string): void {
  const route = table.routeOf(path, req.headers.host)
  ;(req as RoutedMessage)[kRoute] = route === undefined ? NONE : ids[route.index]
}

/** The URLs (and constraint) a route's handlers are registered under. */
export function routeRegistrations (route: Route, byHost: boolean): Array<Pick<RouteOptions, 'url' | 'constraints'>> {
  if (!byHost) return routePatterns(route.prefix).map((url) => ({ url }))
  const constraints = { [CONSTRAINT]: String(route.index) }
  return ['/', '/*'].map((url) => ({ url, constraints }))
}
