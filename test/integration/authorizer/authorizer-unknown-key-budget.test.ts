/**
 * The authorizer charges the budget of unknown keys (limits.unknown_keys_per_peer) to
 * the client address the proxy in front reports: the last `X-Forwarded-For` entry, the
 * one the proxy wrote, when it is an IP address; anything else is charged to the
 * proxy's own address. A client that puts junk of its own there (a new value each
 * request, or 16 KiB of it) neither buys a new budget nor a new table entry. Decision
 * requests over raw sockets, in nginx's shape.
 */
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { assembleKey } from '../../../src/registry/key-format.js'
import { startGateway } from '../../helpers/gateway.js'

const BURST = 5
const YAML = `
authz_listen: "127.0.0.1:0"
limits: { unknown_keys_per_peer: { per_second: 0.01, burst: ${BURST} } }
`

t.test('a random X-Forwarded-For per request: forged keys are still refused once the budget is spent', async (t) => {
  const gw = await startGateway(t, { yaml: YAML })
  let n = 0
  const forged = (): string => assembleKey(gw.config.keys.prefix, ('J' + (n++).toString(36).padStart(15, '0')).slice(0, 16), 'S'.repeat(32))
  const shapes: Array<[string, () => string]> = [
    ['junk', () => `junk-${randomBytes(6).toString('hex')}`],
    ['a long string', () => randomBytes(6000).toString('hex')],
    ['an address with a port', () => `203.0.113.${n % 250}:${1024 + n}`],
    ['a client\'s random entry before the one the proxy appended', () => `198.51.100.${n % 250}, 127.0.0.1`]
  ]
  const reasons: string[] = []
  for (let i = 0; i < 4 * BURST; i++) {
    const [, xff] = shapes[i % shapes.length] as [string, () => string]
    const res = await gw.authz('GET', '/_keygate', [
      ['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/users'],
      ['Authorization', `Bearer ${forged()}`], ['X-Forwarded-For', xff()]
    ])
    t.equal(res.status, 401, `forged key ${i}: 401`)
    reasons.push(String((await gw.logOf(res))?.reason))
  }
  t.same(reasons.slice(0, BURST), Array(BURST).fill('unknown_key'), 'the first lookups are the one budget\'s')
  t.same(reasons.slice(BURST), Array(3 * BURST).fill('unknown_key_limited'), 'then every forged key is refused without Redis, whatever X-Forwarded-For said')

  const real = await gw.authz('GET', '/_keygate', [
    ['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/users'],
    ['Authorization', `Bearer ${forged()}`], ['X-Forwarded-For', '203.0.113.77']
  ])
  t.equal((await gw.logOf(real))?.reason, 'unknown_key', 'an address the proxy reports has its own budget')
})
