/**
 * Fuzzing the authorizer (docs/security.md, "Fuzzing"; docs/authorizer.md): the targets
 * of the data plane's fuzz test asked about in each proxy's way (Traefik's
 * X-Forwarded-Method + X-Forwarded-Uri, nginx's X-Original-Method + X-Original-URI,
 * Envoy's own target), with header sets that carry the identity prefix in every spelling,
 * on a raw socket. For every one:
 *
 * - the answer is one of the contract's: 200 with an empty body, or a catalogue error;
 * - the decision is the data plane's: the same target and key sent to the data plane get
 *   the same status (the data plane's 200 being the upstream's);
 * - a target the contract refuses gets 400; an allowed decision's log line names the path
 *   the contract derives (unreserved escapes decoded once), and only the live key is
 *   allowed;
 * - an allowed answer carries exactly the gateway's identity headers, and nothing a client
 *   sent under the identity prefix;
 * - no key, in any percent-encoding, is in any log line.
 */
import t from 'tap'
import fc from 'fast-check'
import { createRedactor } from '../../../src/redact.js'
import { expectCatalogueError, expectNoKeyInLogs } from '../../helpers/contract-answer.js'
import { checkProperty, expect } from '../../helpers/fuzz.js'
import { credentialChoice, fuzzWorld, observe } from '../../helpers/fuzz-gateway.js'
import { methods, targets } from '../../helpers/fuzz-targets.js'
import { requestBytes, SPOOF } from '../../helpers/fuzz-headers.js'
import { rawRequest } from '../../helpers/raw-http.js'
import { contractTarget } from '../../helpers/target-oracle.js'

type Shape = 'traefik' | 'nginx' | 'envoy'

/** spoofed identity headers in a few spellings, sent with every decision request */
const spoofs = fc.subarray(['X-Auth-User-Id', 'x-auth-role', 'X_Auth_Org_Id', 'X-AUTH-KEY-ID', 'x-auth-assertion',
  'X-Auth-Admin'])
  .map((names) => names.map((n) => `${n}: ${SPOOF}`))

/** The decision request about `method target` in one proxy's shape. */
function decisionBytes (shape: Shape, method: string, target: string, lines: string[]): Buffer {
  const head = ['Host: keygate', ...lines]
  if (shape === 'envoy') return requestBytes(method, target, { lines: head, body: '' })
  const [m, u] = shape === 'traefik'
    ? ['X-Forwarded-Method', 'X-Forwarded-Uri']
    : ['X-Original-Method',
        'X-Original-URI']
  return requestBytes('GET', shape === 'traefik' ? '/' : '/_keygate', {
    lines: [...head, `${m}: ${method}`,
    `${u}: ${target}`],
    body: ''
  })
}

t.test('every decision is one of the contract\'s answers, and the data plane\'s', async (t) => {
  const world = await fuzzWorld(t)
  const { gw, credentials } = world
  const redact = createRedactor(gw.config.keys.prefix)
  const credential = credentialChoice(credentials)
  const shapes = fc.constantFrom<Shape>('traefik', 'nginx', 'envoy')
  const arb = fc.tuple(shapes, methods.filter((m) => m !== 'HEAD'), targets(world.keys), credential, spoofs)

  await checkProperty(t, 'authorizer decisions', arb, 200, async ([shape, method, target, [kind, key], spoofed]) => {
    const lines = [...(key === undefined ? [] : [`Authorization: Bearer ${key}`]), ...spoofed]
    const what = `${shape} ${method} ${JSON.stringify(target)} (${kind} key)`
    const seen = await observe(gw, async () => await rawRequest(gw.authzPort, decisionBytes(shape, method, target,
      lines)))
    const { res } = seen
    const verdict = contractTarget(target)
    expect(seen.forwarded.length === 0, `${what}: a decision request reached the upstream`)

    if (res.status === 200) {
      expect(res.body === '', `${what}: an allowed answer with a body`)
      expect(kind === 'valid', `${what}: a ${kind} key was allowed`)
      expect(!verdict.refused,
        `${what}: allowed, yet the contract refuses the target (${verdict.refused ? verdict.why : ''})`)
      const identity = res.rawHeaders.filter(([name]) => name.toLowerCase().replace(/_/g, '-').startsWith('x-auth-'))
        .map(([name, value]) => [name.toLowerCase(), value]).sort()
      const expected = Object.entries(world.identity).sort()
      expect(JSON.stringify(identity) === JSON.stringify(expected),
        `${what}: the identity headers are ${JSON.stringify(identity)}, not the gateway's ${JSON.stringify(expected)}`)
      expect(!res.rawHeaders.some(([, value]) => value.includes(SPOOF)),
        `${what}: a value the client invented is in the answer`)
      if (!verdict.refused) {
        expect(seen.line?.path === redact.path(verdict.path),
          `${what}: the decision's log line names ${JSON.stringify(seen.line?.path)},
            the contract ${JSON.stringify(verdict.path)}`)
      }
    } else {
      expectCatalogueError(res, what)
    }
    if (verdict.refused) {
      expect(res.status === 400,
      `${what}: the contract refuses the target (${verdict.why}), yet ${res.status}`)
    }

    // the same question to the data plane
    const dataLines = ['Host: localhost', ...(key === undefined ? [] : [`Authorization: Bearer ${key}`])]
    const dataBytes = requestBytes(method, target, { lines: dataLines, body: '' })
    const data = await observe(gw, async () => await rawRequest(gw.port, dataBytes))
    expect(data.res.status === res.status,
      `${what}: the data plane answered ${data.res.status}, the authorizer ${res.status}`)
    expectNoKeyInLogs(data.rawLines, world.keys, what)
    expectNoKeyInLogs(seen.rawLines, world.keys, what)
  })
})
