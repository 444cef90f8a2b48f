/**
 * `keygate check` (its explain function) picks a path's route with the route table
 * the data plane registers (src/decision/route-table.ts). For a table of paths over
 * nested prefixes, the root prefix, trailing slashes and near misses, the route it
 * names is the one whose upstream the running server forwards to, and a path the
 * server answers 404 no_route is one check finds no route for.
 */
import t from 'tap'
import type { Test } from 'tap'
import { explain } from '../../../src/cli/explain.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { startUpstream, type Upstream } from '../../helpers/upstream.js'

const PATHS = [
  '/', '/a', '/ap', '/api', '/api/', '/apix', '/api/x', '/api/v', '/api/v1', '/api/v1/',
  '/api/v1x', '/api/v1x/', '/api/v1x/users', '/api/v1/users', '/api/v1/users/', '/api/v1/a/b/c',
  '/api/v2', '/api/v2/', '/api/v2/x', '/API/v1', '/other/api/v1'
]

interface Setup { gw: TestGateway, upstreams: Record<string, Upstream>, key: string }

async function setup (t: Test, routes: Array<[string, string]>, rules: string[]): Promise<Setup> {
  const upstreams: Record<string, Upstream> = {}
  for (const name of new Set(routes.map(([, u]) => u))) {
    const u = await startUpstream()
    t.teardown(() => u.close())
    upstreams[name] = u
  }
  const yaml = 'upstreams:\n' + Object.entries(upstreams).map(([name, u]) => `  ${name}: { url: "${u.url}" }\n`).join('') +
    'routes:\n' + routes.map(([prefix, upstream]) => `  - { prefix: "${prefix}", upstream: ${upstream} }\n`).join('') +
    'rules:\n' + rules.map((path) => `  - { method: GET, path: "${path}", permissions: [] }\n`).join('')
  const gw = await startGateway(t, { yaml })
  const { key } = await gw.fixtures.personalKey('alice')
  return { gw, upstreams, key }
}

async function compare (t: Test, { gw, upstreams, key }: Setup): Promise<void> {
  for (const path of PATHS) {
    const before = Object.fromEntries(Object.entries(upstreams).map(([name, u]) => [name, u.requests.length]))
    const res = await gw.get(path, key)
    const reached = Object.entries(upstreams).filter(([name, u]) => u.requests.length > (before[name] ?? 0)).map(([name]) => name)
    const served = res.status === 404 ? 'no_route' : reached.join(',')
    const e = await explain(gw.config, gw.client, 'GET', path, key)
    const checked = e.reason === 'no_route' ? 'no_route' : e.route?.upstream
    t.equal(checked, served, `${path}: check says ${String(checked)}, the server answered ${res.status} via ${served || 'no upstream'}`)
    if (served !== 'no_route') t.equal(res.status, 200, `${path}: allowed and forwarded`)
  }
}

t.test('nested prefixes with a root route: check and the server agree on every path', async (t) => {
  await compare(t, await setup(t, [['/', 'root'], ['/api', 'api'], ['/api/v1', 'v1']], ['/*']))
})

t.test('nested prefixes without a root route, listed shortest last: check and the server agree', async (t) => {
  await compare(t, await setup(t, [['/api/v1', 'v1'], ['/api', 'api'], ['/api/v2', 'v2']], ['/api', '/api/*']))
})
