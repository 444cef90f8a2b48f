/**
 * A key pasted where a name belongs reached the log whole: as a query parameter's or
 * a JSON property's name on the admin API (`querystring/kg_...: Unexpected
 * property`), or as a path segment on the data plane. Now anything shaped like a key
 * is logged as `<prefix><id>_[redacted]` at most, on both planes: request paths,
 * query and body property names (nested too), header names.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'
import { send } from '../helpers/raw-http.js'

const TOKEN = 'redact-admin-token-0123456789abcdef'

t.test('no log line holds the secret part of a key, whatever carried it', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const k = await gw.fixtures.personalKey('alice')
  const other = await gw.fixtures.personalKey('bob')
  const secretOf = (key: string): string => key.slice(gw.config.keys.prefix.length + 17)
  const secrets = [secretOf(k.key), secretOf(other.key)]
  const seen = (): string => gw.rawLogs.join('\n')

  await t.test('admin API: a key as a query parameter name', async (t) => {
    const res = await call(gw, 'GET', `/admin/v1/keys?${k.key}=1`, TOKEN)
    t.equal(res.status, 400)
    const line = await gw.logOf(res)
    t.ok(line !== undefined, 'the request has its log line')
    for (const s of secrets) t.notOk(JSON.stringify(line).includes(s), 'not in its line')
  })

  await t.test('admin API: a key as a JSON property name, at the top and nested', async (t) => {
    for (const body of [
      { type: 'personal', user: 'alice', [k.key]: 1 },
      { type: 'personal', user: 'alice', name: { [other.key]: { [k.key]: true } } },
      { type: 'personal', user: 'alice', extra: [{ [k.key.toUpperCase().slice(0, 3) + k.key.slice(3)]: 1 }] }
    ]) {
      const res = await call(gw, 'POST', '/admin/v1/keys', TOKEN, body)
      t.equal(res.status, 400)
      t.ok(await gw.logOf(res) !== undefined)
    }
    for (const s of secrets) t.notOk(seen().includes(s), 'in no line')
  })

  await t.test('admin API: a key in a header name', async (t) => {
    const res = await send(gw.adminPort, 'GET', '/admin/v1/session', { Authorization: `Bearer ${TOKEN}`, [`X-${k.key}`]: '1' })
    t.equal(res.status, 200)
    t.ok(await gw.logOf(res) !== undefined)
    for (const s of secrets) t.notOk(seen().includes(s))
  })

  await t.test('data plane: a key as a path segment, plain, percent-encoded, mistyped prefix; in a header name', async (t) => {
    const targets = [
      `/api/v1/open/${k.key}`,
      `/api/v1/${k.key}/x`,
      `/api/v1/open/${k.key.replace('_', '%5F')}`,
      `/api/v1/open/${k.key.replace(/_/g, '%5f')}`,
      `/api/v1/open/%6B${k.key.slice(1)}`,
      `/api/v1/open/KG_${k.key.slice(3)}`,
      `/nowhere/${k.key}`
    ]
    for (const target of targets) {
      const res = await gw.get(target, other.key)
      const line = await gw.logOf(res)
      t.ok(line !== undefined, `${target}: logged`)
      t.match(String(line?.path), new RegExp(`${k.id}_\\[redacted\\]`), `${target}: logged as its key id`)
    }
    const res = await gw.get('/api/v1/users', other.key, { [`X-${k.key}`]: '1' })
    t.equal(res.status, 200)
    t.ok(await gw.logOf(res) !== undefined)
    for (const s of secrets) t.notOk(seen().includes(s), 'in no line')
  })

  t.notOk(gw.rawLogs.some((l) => secrets.some((s) => l.includes(s))), 'no log line of the whole run holds a secret')
})
