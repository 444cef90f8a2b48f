/**
 * Security review, finding 7: `/metrics` and `/readyz` answer without a credential on
 * the admin listener, which also serves the console: a deployment that puts the console
 * in front of browsers (behind its TLS proxy, for SSO) exposed the gateway's metrics and
 * readiness to whoever reached the console.
 *
 * `ops_listen` moves `/healthz`, `/readyz` and `/metrics` to a listener of their own
 * (a private port for the probes and the scraper); the admin listener then answers them
 * 404, and `keygate health` (the image's HEALTHCHECK) asks ops_listen. Without it, the
 * admin listener serves them.
 */
import t from 'tap'
import { runCli } from '../helpers/cli.js'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest as sendRaw } from '../helpers/raw-http.js'

const PROBES = ['/healthz', '/readyz', '/metrics']

t.test('ops_listen: the probes and the metrics on their own listener, not beside the console', async (t) => {
  const gw = await startGateway(t, { yaml: 'ops_listen: "127.0.0.1:0"\n' })
  const ops = gw.app.ops
  if (ops === undefined) throw new Error('no ops listener')
  await ops.listen({ host: '127.0.0.1', port: 0 })
  const address = ops.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  for (const path of PROBES) {
    const res = await sendRaw(port, `GET ${path} HTTP/1.1\r\nHost: ops\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 200, `${path} on ops_listen`)
    t.equal((await gw.admin('GET', path)).status, 404, `${path}: not on the admin listener`)
  }
  const metrics = await sendRaw(port, 'GET /metrics HTTP/1.1\r\nHost: ops\r\nConnection: close\r\n\r\n')
  t.match(metrics.body, /keygate_/, 'the metrics')
  t.equal((await sendRaw(port, 'GET /admin/v1/session HTTP/1.1\r\nHost: ops\r\nConnection: close\r\n\r\n')).status, 404,
    'nothing else on it')
  t.equal((await gw.admin('GET', '/console/')).status, 200, 'the console stays on the admin listener')

  // the image's HEALTHCHECK follows: `keygate health` asks ops_listen when it is set
  const env = { KEYGATE_ADMIN_LISTEN: `127.0.0.1:${gw.adminPort}`, KEYGATE_OPS_LISTEN: `127.0.0.1:${port}` }
  const health = await runCli(['health', '--ready'], env)
  t.equal(health.code, 0, 'keygate health: exit 0')
  t.match(health.stdout, new RegExp(`/readyz at 127\\.0\\.0\\.1:${port} answered 200`), 'asked on ops_listen')
})

t.test('without ops_listen: the admin listener serves them', async (t) => {
  const gw = await startGateway(t)
  t.equal(gw.app.ops, undefined)
  for (const path of PROBES) t.equal((await gw.admin('GET', path)).status, 200, path)
})
