/**
 * Fuzzing the data plane's request targets (docs/security.md, "Fuzzing"): targets built
 * from every spelling the path policy knows (test/helpers/fuzz-targets.ts), with a live,
 * revoked, unknown or no key, written on a raw socket. For every one:
 *
 * - the answer is one of the contract's: the upstream's own 200, or a catalogue error with
 *   its exact body, content type, request id and challenge; never a 500;
 * - a target the contract refuses (test/helpers/target-oracle.ts, written from the
 *   documents) gets 400 and reaches no upstream; one it accepts outside the route prefix
 *   gets 404;
 * - a forwarded request's path is exactly the decided one: the upstream received the path
 *   the oracle derives (unreserved escapes decoded once) with the query as sent, and the
 *   decision's log line names that path (keys in it shown as their id);
 * - only the live key is ever allowed;
 * - no key, in any percent-encoding, is in any log line.
 */
import t from 'tap'
import fc from 'fast-check'
import { createRedactor } from '../../../src/redact.js'
import { expectCatalogueError, expectNoKeyInLogs } from '../../helpers/contract-answer.js'
import { checkProperty, expect } from '../../helpers/fuzz.js'
import { credentialChoice, fuzzWorld, observe } from '../../helpers/fuzz-gateway.js'
import { methods, targets } from '../../helpers/fuzz-targets.js'
import { requestBytes } from '../../helpers/fuzz-headers.js'
import { rawRequest } from '../../helpers/raw-http.js'
import { contractTarget } from '../../helpers/target-oracle.js'

t.test('every target gets one of the contract\'s answers, and a forwarded one the decided path', async (t) => {
  const world = await fuzzWorld(t)
  const { gw, credentials } = world
  const redact = createRedactor(gw.config.keys.prefix)
  const credential = credentialChoice(credentials)
  const arb = fc.tuple(methods, targets(world.keys), credential)

  await checkProperty(t, 'data plane targets', arb, 250, async ([method, target, [kind, key]]) => {
    const lines = ['Host: localhost', ...(key === undefined ? [] : [`Authorization: Bearer ${key}`])]
    const bytes = requestBytes(method, target, { lines, body: '' })
    const seen = await observe(gw, async () => await rawRequest(gw.port, bytes))
    const { res, forwarded } = seen
    const what = `${method} ${JSON.stringify(target)} (${kind} key)`
    const verdict = contractTarget(target)

    expect(forwarded.length <= 1, `${what}: sent upstream ${forwarded.length} times`)
    const [upstream] = forwarded
    if (upstream === undefined) {
      expectCatalogueError(res, what, method === 'HEAD')
    } else {
      expect(res.status === 200 && res.headers['x-upstream'] === 'yes',
        `${what}: forwarded, yet the answer is ${res.status}`)
      expect(kind === 'valid', `${what}: a ${kind} key was allowed`)
    }
    if (verdict.refused) {
      const forwardedToo = upstream === undefined ? '' : ' and forwarded it'
      expect(res.status === 400 && upstream === undefined,
        `${what}: the contract refuses it (${verdict.why}), the gateway answered ${res.status}${forwardedToo}`)
    } else {
      const underPrefix = verdict.path === '/api/v1' || verdict.path.startsWith('/api/v1/')
      if (!underPrefix) {
        expect(res.status === 404,
        `${what}: ${verdict.path} is under no route prefix, yet ${res.status}`)
      } else if (kind !== 'valid') {
        expect(res.status === 401,
        `${what}: under the prefix without a live key, yet ${res.status}`)
      } else {
        expect(res.status === 200 || res.status === 403,
        `${what}: a live key that may do anything, yet ${res.status}`)
      }
    }
    if (upstream !== undefined && !verdict.refused) {
      const decided = verdict.path + verdict.query
      const got = JSON.stringify(upstream.url)
      expect(upstream.url === decided, `${what}: the upstream received ${got}, not ${JSON.stringify(decided)}`)
      expect(seen.line !== undefined, `${what}: no log line for the forwarded request`)
      const logged = JSON.stringify(seen.line?.path)
      expect(seen.line?.path === redact.path(verdict.path), `${what}: the log line's path ${logged}, forwarded ${got}`)
      expect(upstream.headers['x-request-id'] === res.headers['x-request-id'],
        `${what}: the upstream's request id is not the answer's`)
    }
    expectNoKeyInLogs(seen.rawLines, world.keys, what)
  })
})
