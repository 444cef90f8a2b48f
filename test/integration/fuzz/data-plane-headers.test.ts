/**
 * Fuzzing the data plane's request headers (docs/security.md, "Fuzzing"): header sets
 * (test/helpers/fuzz-headers.ts) with a credential in many spellings, the identity prefix
 * in every spelling, `Connection` naming identity headers, steering and forwarding headers,
 * duplicates, folding, odd casing, oversized values and too many fields, on a raw socket,
 * to targets the contract accepts. For every one:
 *
 * - the answer is one of the contract's (the upstream's 200, or a catalogue error); never
 *   a 500;
 * - only exactly one live `Bearer` credential is ever allowed; a set that breaks a framing
 *   rule is never forwarded;
 * - the upstream receives each identity header exactly once, with the gateway's value,
 *   and nothing a client sent under the identity prefix, a steering or forwarding header,
 *   `Authorization` or a key: no value the client invented reaches it;
 * - no key, in any percent-encoding, is in any log line.
 */
import t from 'tap'
import fc from 'fast-check'
import { expectCatalogueError, expectNoKeyInLogs } from '../../helpers/contract-answer.js'
import { checkProperty, expect } from '../../helpers/fuzz.js'
import { fuzzWorld, observe } from '../../helpers/fuzz-gateway.js'
import { headerSets, requestBytes, SPOOF } from '../../helpers/fuzz-headers.js'
import { rawRequest } from '../../helpers/raw-http.js'
import type { RecordedRequest } from '../../helpers/upstream.js'

const TARGETS = ['/api/v1/users', '/api/v1/open/x?a=1', '/api/v1/orgs/acme/projects', '/ap%69/v1/any',
  '/api/v1/%7Ef.json']

/** the upstream's headers as [name as the gateway compares it: lower case, `_` read as `-`, value] */
function received (rec: RecordedRequest): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (let i = 0; i + 1 < rec.rawHeaders.length; i += 2) {
    out.push([(rec.rawHeaders[i] as string).toLowerCase().replace(/_/g, '-'), rec.rawHeaders[i + 1] as string])
  }
  return out
}

t.test('every header set gets one of the contract\'s answers, and the upstream only the gateway\'s identity',
  async (t) => {
    const world = await fuzzWorld(t)
    const { gw } = world
    const expected = JSON.stringify(Object.entries(world.identity).sort())
    const arb = fc.tuple(fc.constantFrom('GET', 'POST', 'DELETE',
      'HEAD'), fc.constantFrom(...TARGETS), headerSets(world.credentials))

    await checkProperty(t, 'data plane header sets', arb, 200, async ([method, target, set]) => {
      const seen = await observe(gw, async () => await rawRequest(gw.port, requestBytes(method, target, set)))
      const { res } = seen
      const what = `${method} ${target} with ${JSON.stringify(set.lines.map((l) => l.slice(0, 80)))}`
      expect(seen.forwarded.length <= 1, `${what}: sent upstream ${seen.forwarded.length} times`)
      const [upstream] = seen.forwarded

      if (upstream === undefined) {
        expectCatalogueError(res, what, method === 'HEAD')
      } else {
        expect(res.status === 200 && res.headers['x-upstream'] === 'yes',
        `${what}: forwarded, yet the answer is ${res.status}`)
        expect(set.credential === 'valid', `${what}: allowed with a ${set.credential} credential`)
        expect(!set.framing, `${what}: forwarded although it breaks a framing rule`)
        const headers = received(upstream)
        const identity = JSON.stringify(headers.filter(([name]) => name.startsWith('x-auth-')).sort())
        expect(identity === expected,
        `${what}: the upstream's identity headers are ${identity}, not exactly the gateway's ${expected}`)
        const invented = headers.filter(([, value]) => value.includes(SPOOF))
        expect(invented.length === 0,
        `${what}: a value the client invented reached the upstream: ${JSON.stringify(invented)}`)
        const credentials = headers.filter(([name]) => name === 'authorization' || name === 'proxy-authorization')
        expect(credentials.length === 0, `${what}: a credential header reached the upstream`)
        expect(!headers.some(([, value]) => world.keys.some((k) => value.includes(k))),
        `${what}: a key reached the upstream`)
        const ids = headers.filter(([name]) => name === 'x-request-id')
        expect(ids.length === 1 && ids[0]?.[1] === res.headers['x-request-id'],
        `${what}: the upstream's X-Request-Id ${JSON.stringify(ids)} is not the answer's`)
        const xff = headers.filter(([name]) => name === 'x-forwarded-for')
        expect(xff.length === 1 && xff[0]?.[1] === '127.0.0.1',
        `${what}: X-Forwarded-For ${JSON.stringify(xff)} is not the gateway's`)
      }
      if (res.status === 200) expect(upstream !== undefined, `${what}: 200 without reaching the upstream`)
      expectNoKeyInLogs(seen.rawLines, world.keys, what)
    })
  })
