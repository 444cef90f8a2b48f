// Two keys written one after the other in a request path (`/api/v1/<key><key>`) put the
// second key's secret into the log line. The redactor's key shape took every base62
// character after the id, so the first match ran on into the second key's prefix, and
// the second key, left without its prefix, was never seen. Found by the data plane's
// fuzz test (test/integration/fuzz/), with the key twice, percent-encoded twice.
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'

t.test('keys run together in a path are each logged as their id at most', async (t) => {
  const gw = await startGateway(t)
  const first = await gw.fixtures.personalKey('alice')
  const second = await gw.fixtures.personalKey('bob')
  const secretOf = (key: string): string => key.slice(key.lastIndexOf('_') + 1)
  const encodedTwice = (text: string): string => [...Buffer.from(text)].map((b) => '%25' + b.toString(16)).join('')
  for (const [name, target] of [
    ['the same key twice', `/api/v1/open/${first.key}${first.key}`],
    ['two keys', `/api/v1/open/${first.key}${second.key}x`],
    ['two keys, the second upper-case prefix', `/api/v1/open/${first.key}${second.key.replace('kg_', 'KG_')}`],
    ['the same key twice, encoded twice', `/api/v1/open/${encodedTwice(first.key + first.key)}`]
  ] as const) {
    const res = await gw.get(target, first.key)
    t.equal(res.status, 200, `${name}: allowed`)
    const text = JSON.stringify(await gw.logOf(res))
    t.notOk(text.includes(secretOf(first.key)), `${name}: the first key's secret is not in the log line`)
    t.notOk(text.includes(secretOf(second.key)), `${name}: the second key's secret is not in the log line`)
  }
})
