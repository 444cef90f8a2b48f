// A key put in a request path, percent-encoded behind an escape that is not UTF-8
// (`/api/v1/%C3%6b%67%5f...`), reached the log line. The redactor decodes a path before
// it looks for keys; where the whole text does not decode, it decoded each run of escapes,
// and a run that began with `%C3` failed whole, so the key inside it stayed encoded and
// unseen. Found by the data plane's fuzz test (test/integration/fuzz/).
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'

/** `%XX` of each byte, in upper- or lower-case hex */
function percentEncode (text: string, lower = false): string {
  const hex = [...Buffer.from(text)].map((b) => '%' + b.toString(16).padStart(2, '0')).join('')
  return lower ? hex : hex.toUpperCase()
}

t.test('a key encoded behind an invalid UTF-8 escape is not in the log line', async (t) => {
  const gw = await startGateway(t)
  const { id, key } = await gw.fixtures.personalKey('alice')
  const secret = key.slice(key.lastIndexOf('_') + 1)
  for (const [name, target] of [
    ['lower-case hex after %C3', `/api/v1/%C3${percentEncode(key, true)}`],
    ['upper-case hex after %FF', `/api/v1/x%FF${percentEncode(key)}`],
    ['in the middle of a run', `/api/v1/${percentEncode('ab')}%E2%82${percentEncode(key)}%C3`]
  ] as const) {
    const res = await gw.get(target, key)
    t.equal(res.status, 400, `${name}: refused by the target policy`)
    const line = await gw.logOf(res)
    t.ok(line !== undefined, `${name}: logged`)
    const text = JSON.stringify(line)
    const found = [secret, percentEncode(secret), percentEncode(secret, true)].some((s) => text.includes(s))
    t.notOk(found, `${name}: the secret is not in the log line`)
    t.ok(text.includes(id), `${name}: the key's id stands in for it`)
  }
})
