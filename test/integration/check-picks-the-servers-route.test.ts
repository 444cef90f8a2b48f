/**
 * `keygate check` picks a request's route exactly as the running server does: both
 * use the route table of src/pipeline/route-table.ts. Nested prefixes, the prefix
 * itself, trailing slashes and look-alike prefixes, each sent to a real gateway with
 * three upstreams (which one received the request says which route the server chose)
 * and explained by `check`'s own function.
 */
import t from 'tap'
import { explain } from '../../src/cli/explain.js'
import { startGateway } from '../helpers/gateway.js'
import { startUpstream } from '../helpers/upstream.js'

const PATHS = [
  '/api', '/api/', '/api/x', '/apix', '/api/v1', '/api/v1/', '/api/v1/users', '/api/v1x',
  '/api/v1/deep', '/api/v1/deep/', '/api/v1/deep/er', '/api/v1/deeper', '/', '/other'
]

t.test('check and the server choose the same route for every path', async (t) => {
  const a = await startUpstream()
  t.teardown(() => a.close())
  const b = await startUpstream()
  t.teardown(() => b.close())
  const gw = await startGateway(t, {
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no core upstream')
      config.upstreams = { core, a: { ...core, url: a.url }, b: { ...core, url: b.url } }
      config.routes = [{ prefix: '/api', upstream: 'a' }, { prefix: '/api/v1', upstream: 'b' }, { prefix: '/api/v1/deep', upstream: 'core' }]
      config.rules = [{ method: 'GET', path: '/*', permissions: [] }]
    }
  })
  const { key } = await gw.fixtures.personalKey('alice')
  const upstreams = { a, b, core: gw.upstream }

  for (const path of PATHS) {
    const counts = Object.fromEntries(Object.entries(upstreams).map(([name, u]) => [name, u.requests.length]))
    const res = await gw.get(path, key)
    const received = Object.entries(upstreams).filter(([name, u]) => u.requests.length > (counts[name] ?? 0)).map(([name]) => name)
    const served = res.status === 404 ? undefined : received[0]
    t.ok(res.status === 404 || res.status === 200, `${path}: forwarded or no route (${res.status})`)
    const explained = await explain(gw.config, gw.client, 'GET', path, key)
    t.equal(explained.route?.upstream, served, `${path}: check says ${explained.route?.upstream ?? 'no route'}, the server used ${served ?? 'no route'}`)
  }
})
