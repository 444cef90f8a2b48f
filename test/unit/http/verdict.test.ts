// One verdict-to-response for every front end (src/http/verdict.ts): what a sink is
// told for each kind of verdict. The data plane and the authorizer hand a fastify
// reply, the WebSocket upgrade its raw socket; both get exactly these calls.
import t from 'tap'
import { renderVerdict, type VerdictSink } from '../../../src/http/verdict.js'
import type { Verdict } from '../../../src/decision/verdict.js'
import type { Identity } from '../../../src/decision/identity.js'
import { NO_GRANTS } from '../../../src/registry/records.js'

const identity: Identity = { keyId: 'k1', type: 'bot', userId: undefined, org: 'acme', role: 'deployer', grants: NO_GRANTS }
const rule = { index: 0, method: 'GET', path: '/api/v1/users', permissions: [], scope: '', orgParam: undefined, public: false, cost: 1, defaultCost: 1 }

function record (verdict: Verdict): { calls: unknown[], result: boolean } {
  const calls: unknown[] = []
  const sink: VerdictSink<string> = {
    rateLimit: (to, headers) => { calls.push(['rateLimit', to, headers]) },
    refuse: (to, code, reason, challenge) => { calls.push(['refuse', to, code, reason, challenge]) }
  }
  return { calls, result: renderVerdict(verdict, sink, 'the response') }
}

t.test('allowed, no rate limit: allowed, nothing on the response', async (t) => {
  const { calls, result } = record({ ok: true, identity, rule })
  t.equal(result, true)
  t.same(calls, [])
})

t.test('allowed under a rate limit: its headers, then allowed', async (t) => {
  const { calls, result } = record({ ok: true, identity, rule, rateLimit: { allowed: true, limit: 10, remaining: 9, resetS: 1 } })
  t.equal(result, true)
  t.same(calls, [['rateLimit', 'the response', { 'ratelimit-limit': '10', 'ratelimit-remaining': '9', 'ratelimit-reset': '1' }]])
})

t.test('refused with a challenge: the refusal carries it', async (t) => {
  const challenge = 'Bearer realm="keygate", error="invalid_token"'
  const { calls, result } = record({ ok: false, code: 'unauthorized', reason: 'key_revoked', challenge, keyId: 'k1' })
  t.equal(result, false)
  t.same(calls, [['refuse', 'the response', 'unauthorized', 'key_revoked', challenge]])
})

t.test('refused over a limit: the limit\'s headers with Retry-After, then the 429', async (t) => {
  const { calls } = record({ ok: false, code: 'rate_limited', reason: 'rate_limited', challenge: undefined, keyId: 'k1', identity, rule, rateLimit: { allowed: false, reason: 'rate_limited', limit: 5, remaining: 0, resetS: 3, retryAfterS: 3 } })
  t.same(calls, [
    ['rateLimit', 'the response', { 'ratelimit-limit': '5', 'ratelimit-remaining': '0', 'ratelimit-reset': '3', 'retry-after': '3' }],
    ['refuse', 'the response', 'rate_limited', 'rate_limited', undefined]
  ])
})

t.test('rate limits unavailable: no limit headers, the 503', async (t) => {
  const { calls } = record({ ok: false, code: 'service_unavailable', reason: 'rate_limit_unavailable', challenge: undefined, keyId: 'k1', identity, rule })
  t.same(calls, [['refuse', 'the response', 'service_unavailable', 'rate_limit_unavailable', undefined]])
})

t.test('anonymous under the anonymous limit: its headers, then allowed', async (t) => {
  const { calls, result } = record({ ok: true, anonymous: true, identity: undefined, rule: { ...rule, public: true }, rateLimit: { allowed: true, limit: 3, remaining: 2, resetS: 1 } })
  t.equal(result, true)
  t.same(calls, [['rateLimit', 'the response', { 'ratelimit-limit': '3', 'ratelimit-remaining': '2', 'ratelimit-reset': '1' }]])
})
