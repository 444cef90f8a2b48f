/**
 * `keygate check` and routes (docs/routing.md): `--anonymous` decides a request without a
 * key (a public rule says `public`, anything else 401), `--host` picks a route with
 * hosts, and the route's forwarded path is shown; the CLI itself, as an operator runs it.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { cliEnv, runCli } from '../../helpers/cli.js'

t.test('check with --anonymous, --host, and a rewritten route', async (t) => {
  const gw = await startGateway(t, {
    yaml: `
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /inventory, upstream: core, hosts: [inv.example.com], rewrite_prefix: /v1/inventory, key_header: apikey }
rules:
  - { method: GET, path: /api/v1/health, public: true }
  - { method: GET, path: /api/v1/*, permissions: [] }
  - { method: GET, path: /inventory/*, permissions: [] }
`
  })
  const env = cliEnv(gw)

  const pub = await runCli(['check', '--anonymous', 'GET', '/api/v1/health'], env)
  t.equal(pub.code, 0, 'allowed: exit 0')
  t.match(pub.stdout, /ALLOW -> forwarded upstream {2}\(reason: public\)/)
  t.match(pub.stdout, /rule {6}#0 GET \/api\/v1\/health is public/)
  t.match(pub.stdout, /header {4}x-auth-anonymous: true/)

  const denied = await runCli(['check', '--anonymous', '--json', 'GET', '/api/v1/other'], env)
  t.equal(denied.code, 3, 'not public: denied, exit 3')
  t.equal((JSON.parse(denied.stdout) as { reason: string }).reason, 'missing_credential')

  const { key } = await gw.fixtures.botKey('admin', 'acme')
  const routed = await runCli(['check', '--json', '--host', 'inv.example.com', 'GET', '/inventory/items'], { ...env, KEYGATE_KEY: key })
  t.equal(routed.code, 0)
  const e = JSON.parse(routed.stdout) as { reason: string, route: Record<string, unknown> }
  t.equal(e.reason, 'allowed')
  t.same(e.route, { prefix: '/inventory', upstream: 'core', hosts: ['inv.example.com'], key_header: 'apikey', forwarded_path: '/v1/inventory/items' })

  const elsewhere = await runCli(['check', '--json', '--host', 'other.test', 'GET', '/inventory/items'], { ...env, KEYGATE_KEY: key })
  t.equal(elsewhere.code, 3)
  t.equal((JSON.parse(elsewhere.stdout) as { reason: string }).reason, 'no_route', 'another host: no route')
})
