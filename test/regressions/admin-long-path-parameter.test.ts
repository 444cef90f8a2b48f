/**
 * The admin listener answered a path parameter longer than 100 characters with
 * fastify's own 414 (FST_ERR_MAX_PARAM_LENGTH), whose body echoed the path: a key put
 * in the path (`GET /admin/v1/keys/<the whole key>`) came back in the error body, and
 * the answer had no request id and left no log line. It answers with the catalogue's
 * error object (nothing of the path in it), a request id, and its log line (the key
 * redacted there, as everywhere).
 */
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest, req } from '../helpers/raw-http.js'

const TOKEN = 'admin-long-param-token-0123456789abcdef'

t.test('a path parameter over 100 characters on the admin listener', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const { key } = await gw.fixtures.personalKey('alice')
  const param = `${key}${'x'.repeat(120)}`
  t.ok(param.length > 100)
  const res = await rawRequest(gw.adminPort, req('GET', `/admin/v1/keys/${param}`, [['Authorization', `Bearer ${TOKEN}`]]))
  t.ok(res.status >= 400 && res.status < 500, `a refusal (${res.status})`)
  t.match(res.json(), { error: { code: /./, status: res.status } }, 'the catalogue\'s error object')
  t.notOk(res.body.includes(key), 'no key in the body')
  t.notOk(res.body.includes('x'.repeat(50)), 'nothing of the path in the body')
  const id = res.headers['x-request-id'] ?? ''
  t.match(id, /^[0-9a-f-]{36}$/, 'a request id')
  const line = gw.logs.find((l) => l.req_id === id)
  t.ok(line !== undefined, 'a log line')
  t.notOk(gw.rawLogs.join('\n').includes(key), 'no key in any log line')
})
