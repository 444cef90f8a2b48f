// The route table (src/decision/route-table.ts) and each route's rewrite
// (src/decision/route-rewrite.ts): the most specific route wins (the longest prefix,
// then an exact host over a wildcard over none), and what is forwarded is the decided
// path with its prefix replaced, which the target policy accepts unchanged.
import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { compileRouteTable, hostName } from '../../../src/decision/route-table.js'
import { pathRewrite } from '../../../src/decision/route-rewrite.js'
import { checkTarget } from '../../../src/decision/target-policy.js'

const config = parseConfig(`
upstreams: { any: { url: "http://127.0.0.1:1" }, exact: { url: "http://127.0.0.1:2" }, wild: { url: "http://127.0.0.1:3" },
  deep: { url: "http://127.0.0.1:4" }, long: { url: "http://127.0.0.1:5" }, root: { url: "http://127.0.0.1:6" } }
routes:
  - { prefix: /, upstream: root }
  - { prefix: /api, upstream: any }
  - { prefix: /api, upstream: exact, hosts: [API.example.com, other.test] }
  - { prefix: /api, upstream: wild, hosts: ["*.example.com"] }
  - { prefix: /api, upstream: deep, hosts: ["*.eu.example.com"] }
  - { prefix: /api/v2, upstream: long }
  - { prefix: /only, upstream: exact, hosts: [only.test] }
`)
const table = compileRouteTable(config.routes)

t.test('the most specific route', async (t) => {
  const cases: Array<[string | undefined, string, string | undefined]> = [
    [undefined, '/api/x', 'any'],
    ['localhost', '/api/x', 'any'],
    ['api.example.com', '/api/x', 'exact'],
    ['Api.Example.Com:443', '/api', 'exact'],
    ['api.example.com.', '/api/', 'exact'],
    ['other.test', '/api/x', 'exact'],
    ['x.example.com', '/api/x', 'wild'],
    ['x.y.example.com', '/api/x', 'wild'],
    ['x.eu.example.com', '/api/x', 'deep'],
    ['eu.example.com', '/api/x', 'wild'],
    ['example.com', '/api/x', 'any'],
    ['api.example.com', '/api/v2/x', 'long'],
    ['api.example.com', '/apis', 'root'],
    ['only.test', '/only/x', 'exact'],
    ['other.test', '/only/x', 'root'],
    [undefined, '/only/x', 'root'],
    ['[::1]:8080', '/api/x', 'any'],
    ['bad host!', '/api/x', 'any'],
    ['a,b', '/api/x', 'any']
  ]
  for (const [host, path, upstream] of cases) t.equal(table.routeOf(path, host)?.upstream, upstream, `${host ?? '(no Host)'} ${path}`)
  t.equal(table.byHost, true)
})

t.test('without hosts the table is the prefix router alone', async (t) => {
  const plain = compileRouteTable(parseConfig('upstreams: { a: { url: "http://127.0.0.1:1" } }\nroutes: [{ prefix: /a, upstream: a }]').routes)
  t.equal(plain.byHost, false)
  t.equal(plain.routeOf('/a/x', 'whatever.test')?.upstream, 'a')
  t.equal(plain.routeOf('/b', undefined), undefined)
})

t.test('host names as a Host header gives them', async (t) => {
  t.equal(hostName('EXAMPLE.com:8080'), 'example.com')
  t.equal(hostName('example.com.'), 'example.com')
  t.equal(hostName('[::1]:80'), '')
  t.equal(hostName(''), '')
  t.equal(hostName('a b'), '')
})

t.test('rewrites: the decided path with its prefix replaced, accepted by the target policy as it is', async (t) => {
  const cases: Array<[{ prefix: string, strip_prefix?: boolean, rewrite_prefix?: string }, string, string]> = [
    [{ prefix: '/api', strip_prefix: true }, '/api', '/'],
    [{ prefix: '/api', strip_prefix: true }, '/api/', '/'],
    [{ prefix: '/api', strip_prefix: true }, '/api/x/y', '/x/y'],
    [{ prefix: '/a/b', strip_prefix: true }, '/a/b/c', '/c'],
    [{ prefix: '/api', rewrite_prefix: '/v2' }, '/api', '/v2'],
    [{ prefix: '/api', rewrite_prefix: '/v2' }, '/api/', '/v2/'],
    [{ prefix: '/api', rewrite_prefix: '/v2' }, '/api/x', '/v2/x'],
    [{ prefix: '/api', rewrite_prefix: '/' }, '/api/x', '/x'],
    [{ prefix: '/', rewrite_prefix: '/v2' }, '/', '/v2'],
    [{ prefix: '/', rewrite_prefix: '/v2' }, '/x', '/v2/x'],
    [{ prefix: '/inventory', rewrite_prefix: '/v1/inventory' }, '/inventory/items/caf%C3%A9', '/v1/inventory/items/caf%C3%A9']
  ]
  for (const [route, path, forwarded] of cases) {
    const rewrite = pathRewrite(route)
    t.equal(rewrite?.(path), forwarded, `${JSON.stringify(route)} ${path}`)
    const checked = checkTarget(forwarded)
    t.same(checked.ok ? checked.path : checked, forwarded, `${forwarded} passes the target policy unchanged`)
  }
  t.equal(pathRewrite({ prefix: '/api' }), undefined, 'no rewrite: none at all')
  t.equal(pathRewrite({ prefix: '/', strip_prefix: true }), undefined, 'stripping / changes nothing')
  t.equal(pathRewrite({ prefix: '/api', rewrite_prefix: '/api' }), undefined, 'rewriting to itself changes nothing')
})
