/**
 * Route prefixes (docs/request-flow.md): a route prefix covers itself and everything
 * under it, and nothing that merely starts with the same characters; `/` covers every
 * path. What is under a prefix is authenticated (401 without a key), what is not is
 * `404 no_route`; an allowed request reaches the upstream with its path unchanged.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'

t.test('/api/v1 covers /api/v1, /api/v1/ and /api/v1/..., not /api/v1x', async (t) => {
  const gw = await startGateway(t)
  for (const path of ['/api/v1', '/api/v1/', '/api/v1/users']) {
    const res = await gw.get(path)
    t.equal(res.status, 401, `${path}: under the prefix, so authenticated first`)
  }
  for (const path of ['/api/v1x', '/api', '/']) {
    const res = await gw.get(path)
    t.equal(res.status, 404, `${path}: under no prefix`)
    t.equal((await gw.logOf(res))?.reason, 'no_route')
  }
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/open/', key)
  t.equal(res.status, 200, 'a trailing slash under the prefix is forwarded')
  t.equal(gw.upstream.last()?.url, '/api/v1/open/', 'exactly as decided')
})

t.test('the prefix / covers every path', async (t) => {
  const gw = await startGateway(t, { yaml: 'routes:\n  - { prefix: /, upstream: core }\n' })
  for (const path of ['/', '/anything', '/api/v1x']) {
    const res = await gw.get(path)
    t.equal(res.status, 401, `${path}: under /, so authenticated first`)
  }
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users?page=2', key)
  t.equal(res.status, 200)
  t.equal(gw.upstream.last()?.url, '/api/v1/users?page=2', 'path and query forwarded as received')
})
