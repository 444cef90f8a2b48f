/**
 * No depth of percent-encoding carries a key into a log line or an exported span: a
 * key whose `_` (or prefix) is encoded once, twice or three times (`kg%5F`, `kg%255F`,
 * `kg%25255F`), in a request path (data plane and authorizer), a query parameter's name
 * (admin API, data plane) or a header's name, is logged and exported as its key id at
 * most. Requests over raw sockets; spans at a real OTLP/HTTP receiver.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.js'
import { send } from '../../helpers/raw-http.js'

const TOKEN = 'redaction-admin-token-0123456789abcdef'

/** `key` with its separators (and the prefix's first letter) percent-encoded, `depth` times over. */
function encoded (key: string, depth: number, prefixToo: boolean): string {
  let out = key.replace(/_/g, '%5F')
  if (prefixToo) out = '%6B' + out.slice(1)
  for (let i = 1; i < depth; i++) out = out.replace(/%/g, '%25')
  return out
}

t.test('a key encoded once, twice or three times never reaches a log line or a span', async (t) => {
  const otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  const gw = await startGateway(t, {
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    yaml: `authz_listen: "127.0.0.1:0"\ntracing: { otlp_endpoint: "${otlp.url}", sample_ratio: 1.0 }\n`
  })
  const alice = await gw.fixtures.personalKey('alice')
  const k = await gw.fixtures.personalKey('bob')
  const secret = k.key.slice(gw.config.keys.prefix.length + 17)

  for (const depth of [1, 2, 3, 4]) {
    for (const prefixToo of [false, true]) {
      const e = encoded(k.key, depth, prefixToo)
      const what = `depth ${depth}${prefixToo ? ', prefix encoded too' : ''}`
      const before = gw.rawLogs.length
      const responses = [
        await gw.get(`/api/v1/open/${e}`, alice.key),
        await gw.get(`/api/v1/open/x?${e}=1`, alice.key),
        await gw.get('/api/v1/open/x', alice.key, { [`X-${e}`]: '1' }),
        await gw.authz('GET', '/_keygate', [['X-Original-Method', 'GET'], ['X-Original-URI', `/api/v1/open/${e}`], ['Authorization', `Bearer ${alice.key}`]]),
        await call(gw, 'GET', `/admin/v1/keys?${e}=1`, TOKEN),
        await send(gw.adminPort, 'GET', '/admin/v1/session', { Authorization: `Bearer ${TOKEN}`, [`X-${e}`]: '1' })
      ]
      for (const res of responses) t.ok(await gw.logOf(res) !== undefined, `${what}: ${res.status}, logged`)
      const lines = gw.rawLogs.slice(before).join('\n')
      t.notOk(lines.includes(secret), `${what}: no log line holds the secret`)
      t.notOk(lines.includes(secret.slice(0, 16)), `${what}: nor half of it`)
    }
  }
  await gw.app.tracing.flush()
  const exported = Buffer.concat(otlp.bodies).toString('utf8')
  t.ok(otlp.bodies.length > 0, 'spans were exported')
  t.ok(exported.includes(k.id), 'the key id may be there (it is public)')
  t.notOk(exported.includes(secret), 'no exported span holds the secret')
  t.notOk(exported.includes(secret.slice(0, 16)), 'nor half of it')
})
