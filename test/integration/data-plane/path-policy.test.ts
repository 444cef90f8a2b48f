/**
 * The path policy (docs/security.md, "Requests"): the request target must be origin-form; dot
 * segments (in any percent-encoded spelling), empty segments, encoded `/` or `\`,
 * raw `\`, `;`, `%00`, control characters and invalid percent-encoding get
 * `400 bad_request` and never reach an upstream. Percent-encoded unreserved
 * characters are decoded once before matching, and the decoded form is what the
 * upstream receives; everything else is forwarded byte for byte.
 *
 * Every target is sent over a raw socket with a valid key that may call any path
 * under /api/v1 (a catch-all rule without permissions), so a 400 proves the
 * policy, never authentication or authorization.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { ACCEPTED_TARGETS, DECODED_RULE_TARGETS, REFUSED_TARGETS } from '../../helpers/path-cases.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'

// The standard rules, plus a catch-all that any valid key may call.
const RULES = `
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [orgs:read], org_param: org }
  - { method: "*",  path: /api/v1/*,            permissions: [] }
`

/** one gateway for the file: each test uses its own keys and counts the upstream's requests from its own start */
let gw: TestGateway
t.before(async () => { gw = await startGateway(t, { yaml: RULES }) })

const BAD_REQUEST_BODY = { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }

function assertBadRequest (t: Test, res: RawResponse): void {
  t.equal(res.status, 400, 'status 400')
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'JSON error content type')
  t.same(JSON.parse(res.body), BAD_REQUEST_BODY, 'the catalogue body for 400')
  t.ok((res.headers['x-request-id'] ?? '') !== '', 'carries X-Request-Id')
}

/** A request line with an exact target, sent byte for byte; the key is admin (`*`). */
function rawGet (method: string, target: string | Buffer, key: string): Buffer {
  const head = Buffer.from(`${method} `, 'latin1')
  const tail = Buffer.from(` HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, 'latin1')
  return Buffer.concat([head, typeof target === 'string' ? Buffer.from(target, 'utf8') : target, tail])
}

t.test('refused request targets: 400 bad_request, upstream never contacted', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')

  // Sanity: the same key and rule set reach the upstream with a clean path.
  const ok = await gw.send('GET', '/api/v1/x', { Authorization: `Bearer ${key}` })
  t.equal(ok.status, 200, 'control: a clean path under the catch-all rule is forwarded')

  for (const [name, method, target] of REFUSED_TARGETS) {
    await t.test(`${name}: ${JSON.stringify(target.toString())}`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await rawRequest(gw.port, rawGet(method, target, key))
      assertBadRequest(t, res)
      t.equal(gw.upstream.requests.length, before, 'the upstream was never contacted')
    })
  }
})

t.test('accepted request targets are forwarded byte for byte (unreserved escapes decoded once)', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')

  for (const [name, target, forwarded] of ACCEPTED_TARGETS) {
    await t.test(`${name}: ${target}`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await rawRequest(gw.port, rawGet('GET', target, key))
      t.equal(res.status, 200, 'forwarded')
      t.equal(res.headers['x-upstream'], 'yes', 'the answer came from the upstream')
      t.equal(gw.upstream.requests.length, before + 1, 'exactly one upstream request')
      t.equal(gw.upstream.last()?.url, forwarded, 'the upstream received exactly this target')
    })
  }
})

t.test('the rule is matched against the decoded path, the one forwarded', async (t) => {
  // carol (orgreader) lacks users:read; alice (reader) has it.
  const carol = await gw.fixtures.personalKey('carol')
  const alice = await gw.fixtures.personalKey('alice')

  for (const [name, target] of DECODED_RULE_TARGETS) {
    await t.test(name, async (t) => {
      await check(t, gw, target, carol.key, alice.key)
    })
  }
})

async function check (t: Test, gw: TestGateway, target: string, withoutPermission: string, withPermission: string): Promise<void> {
  // Read undecoded, the target would fall to the permission-free catch-all rule.
  const before = gw.upstream.requests.length
  const denied = await rawRequest(gw.port, rawGet('GET', target, withoutPermission))
  t.equal(denied.status, 403, 'a key without users:read is refused on the decoded path /api/v1/users')
  t.equal(gw.upstream.requests.length, before, 'the refused request never reached the upstream')

  const allowed = await rawRequest(gw.port, rawGet('GET', target, withPermission))
  t.equal(allowed.status, 200, 'a key with users:read is let through')
  t.equal(gw.upstream.last()?.url, '/api/v1/users', 'and the upstream receives the decoded path it was authorised on')
}

t.test('a refused target is refused before routing: also outside every route prefix and without a key', async (t) => {
  const cases = ['/other/../api/v1/users', '/x/%2e%2e/api/v1/users', '/a%2Fb', '//api/v1/users']
  for (const target of cases) {
    await t.test(target, async (t) => {
      const before = gw.upstream.requests.length
      const res = await gw.send('GET', target)
      assertBadRequest(t, res)
      t.equal(gw.upstream.requests.length, before, 'the upstream was never contacted')
    })
  }
})
