/**
 * Attacks through a real nginx in front of the authorizer (docs/authorizer.md's
 * configuration, read from that page). nginx's `auth_request` passes a client's own
 * headers on to keygate, so a client can add Traefik's `X-Forwarded-Method` and
 * `X-Forwarded-Uri` and its own `X-Forwarded-For`:
 * - with a configuration that does not blank Traefik's pair, `authz.proxy: auto`
 *   refuses the ambiguous decision request (400) and `authz.proxy: nginx` decides on
 *   the request nginx forwards; neither lets the client's pair choose the path;
 * - a random `X-Forwarded-For` per request never buys a new budget of unknown keys;
 * - the assertion signs the path nginx forwards, not a normalised one.
 */
import t from 'tap'
import type { Test } from 'tap'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { assembleKey } from '../../../src/registry/key-format.js'
import { writeKeyFile } from '../../helpers/assertion-keys.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { freePort } from '../../helpers/net.js'
import { nginxConfigFromDocs, startNginx } from '../../helpers/nginx.js'
import { send, type RawResponse } from '../../helpers/raw-http.js'

const RULES = 'authz_listen: "127.0.0.1:0"\n'
type Via = (method: string, target: string, headers?: Record<string, string>) => Promise<RawResponse>

/** The documented configuration without the lines that blank Traefik's pair on the decision request. */
function withoutBlanking (conf: string): string {
  const blanked = /^\s*proxy_set_header X-Forwarded-(Method|Uri)\s+"";\n/gm
  const out = conf.replace(blanked, '')
  if (out === conf) throw new Error('docs/authorizer.md\'s nginx block no longer blanks X-Forwarded-Method/-Uri')
  return out
}

async function setup (t: Test, yaml: string, edit: (conf: string) => string = (c) => c): Promise<{ gw: TestGateway, via: Via }> {
  const gw = await startGateway(t, { yaml: RULES + yaml })
  const port = await freePort()
  await startNginx(t, edit(nginxConfigFromDocs(gw.authzPort, gw.upstream.port, port)), port)
  return { gw, via: async (method, target, headers = {}) => await send(port, method, target, { ...headers, Connection: 'close' }) }
}

// alice (users:read) asks for POST /api/v1/users (users:write), naming GET in Traefik's pair
const SPOOFED_PAIR = { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/api/v1/users' }

t.test('a client\'s own Traefik pair through nginx that passes it on: auto refuses it (400), nothing forwarded', async (t) => {
  const { gw, via } = await setup(t, '', withoutBlanking)
  const alice = await gw.fixtures.personalKey('alice')
  const before = gw.upstream.requests.length
  const res = await via('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}`, ...SPOOFED_PAIR })
  t.equal(res.status, 400, 'ambiguous: 400, not the 200 of the GET the client named')
  t.same(JSON.parse(res.body), { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }, 'keygate\'s error object')
  t.equal(gw.upstream.requests.length, before, 'not forwarded')
  const line = await gw.logOf(res)
  t.equal(line?.via, 'ambiguous')
  t.equal((await via('GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status, 200, 'without the client\'s pair: allowed')
})

t.test('a client\'s own Traefik pair through nginx that passes it on: authz.proxy nginx decides on nginx\'s pair', async (t) => {
  const { gw, via } = await setup(t, 'authz: { proxy: nginx }\n', withoutBlanking)
  const alice = await gw.fixtures.personalKey('alice')
  const before = gw.upstream.requests.length
  const res = await via('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}`, ...SPOOFED_PAIR })
  t.equal(res.status, 403, 'decided on the POST nginx forwards: missing users:write')
  t.equal(JSON.parse(res.body).error.code, 'forbidden')
  t.equal(gw.upstream.requests.length, before, 'not forwarded')
  const line = await gw.logOf(res)
  t.equal(line?.via, 'nginx')
  t.equal(line?.method, 'POST')
})

t.test('the documented configuration: a client\'s Traefik pair never reaches keygate', async (t) => {
  const { gw, via } = await setup(t, '')
  const alice = await gw.fixtures.personalKey('alice')
  const res = await via('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}`, ...SPOOFED_PAIR })
  t.equal(res.status, 403, 'decided on the POST')
  t.equal((await gw.logOf(res))?.via, 'nginx')
})

t.test('a random X-Forwarded-For per request: forged keys are refused without Redis once the budget is spent', async (t) => {
  const BURST = 5
  const { gw, via } = await setup(t, `limits: { unknown_keys_per_peer: { per_second: 0.01, burst: ${BURST} } }\n`)
  const reasons: string[] = []
  for (let n = 0; n < 3 * BURST; n++) {
    const key = assembleKey(gw.config.keys.prefix, ('N' + n.toString(36).padStart(15, '0')).slice(0, 16), 'S'.repeat(32))
    const xff = `${1 + n % 223}.${n % 256}.${(n * 7) % 256}.${(n * 13) % 256}`
    const res = await via('GET', '/api/v1/users', { Authorization: `Bearer ${key}`, 'X-Forwarded-For': xff })
    t.equal(res.status, 401, `forged key ${n}: 401`)
    // a refusal is asked twice through nginx (the refusal location): the client's answer is the second's
    reasons.push(String((await gw.logOf(res))?.reason))
  }
  const limited = reasons.filter((r) => r === 'unknown_key_limited').length
  t.ok(limited >= 2 * BURST - 1, `most forged keys are refused without a lookup (${limited} of ${reasons.length}: ${reasons.join(',')})`)
})

t.test('the assertion\'s htu is the path nginx forwards, byte for byte, also when it differs from the decided one', async (t) => {
  const key = writeKeyFile('EdDSA')
  const gw = await startGateway(t, { yaml: RULES + 'identity: { assertion: { enabled: true } }\n', env: { KEYGATE_ASSERTION_KEY_FILE: key.file } })
  const port = await freePort()
  await startNginx(t, nginxConfigFromDocs(gw.authzPort, gw.upstream.port, port), port)
  const alice = await gw.fixtures.personalKey('alice')
  const res = await send(port, 'GET', '/api/v1/%75sers?page=2', { Authorization: `Bearer ${alice.key}`, Connection: 'close' })
  t.equal(res.status, 200, 'decided as /api/v1/users')
  const up = gw.upstream.last()
  t.equal(up?.url, '/api/v1/%75sers?page=2', 'nginx forwards the raw target')
  const keySet = createRemoteJWKSet(new URL(`http://127.0.0.1:${gw.adminPort}/.well-known/jwks.json`))
  const { payload } = await jwtVerify(String(up?.headers['x-auth-assertion'] ?? ''), keySet, { issuer: 'keygate', algorithms: ['EdDSA'] })
  t.equal(payload.htu, '/api/v1/%75sers', 'htu: the path the upstream received')
})
