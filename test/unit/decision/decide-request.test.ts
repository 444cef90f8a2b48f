// The stages after authentication are a list the decision runs in order
// (src/decision/stages/index.ts). Adding a check is one file and one line: here a
// stage that refuses a method is added to the list, and the decision runs it in its
// place, refusing and letting through, synchronously or not.
import t from 'tap'
import { createDecider, type RequestDecider } from '../../../src/decision/decide-request.js'
import type { Authentication } from '../../../src/decision/authenticate-request.js'
import type { Identity } from '../../../src/decision/identity.js'
import { compileRules } from '../../../src/decision/match-rule.js'
import { DECISION_STAGES } from '../../../src/decision/stages/index.js'
import type { DecisionStage, StageCheck } from '../../../src/decision/stages/stage.js'
import { refusal, type Verdict } from '../../../src/decision/verdict.js'
import { PROXIED_METHODS } from '../../../src/http/methods.js'
import type { Check, Limiter } from '../../../src/ratelimit/limiter.js'
import { Grants } from '../../../src/registry/records.js'

const NOW = Date.UTC(2026, 5, 1)
const identity: Identity = { keyId: 'k1', type: 'bot', userId: undefined, org: 'acme', role: 'deployer', grants: new Grants(['users:*']) }
const matchRule = compileRules([
  { method: '*', path: '/api/v1/users', permissions: ['users:read'] },
  { method: 'GET', path: '/api/v1/admin', permissions: ['admin:read'] }
], PROXIED_METHODS)
const routeOf = (): undefined => undefined

/** the new stage: one file's worth, refusing DELETE */
const noDelete: DecisionStage = {
  name: 'no delete',
  answer: '403',
  files: ['src/decision/stages/no-delete.ts'],
  build: () => (p, method) => method === 'DELETE' ? refusal(p, 'forbidden', 'no_rule', 'Bearer realm="keygate"') : undefined
}

/** every stage, recording that it ran */
function traced (stages: readonly DecisionStage[], ran: string[]): DecisionStage[] {
  return stages.map((s) => ({
    ...s,
    build: (parts) => {
      const check = s.build(parts)
      const run: StageCheck = (p, method, path, client, now) => {
        ran.push(s.name)
        return check(p, method, path, client, now)
      }
      return run
    }
  }))
}

function decider (o: { stages: readonly DecisionStage[], limit?: Check, async?: boolean }): RequestDecider {
  const auth: Authentication = { ok: true, identity }
  const limiter: Limiter = { check: () => o.limit }
  return createDecider({
    authenticate: () => o.async === true ? Promise.resolve(auth) : auth,
    matchRule,
    routeOf,
    limiter,
    stages: o.stages
  })
}

const names = (stages: readonly DecisionStage[]): string[] => stages.map((s) => s.name)

t.test('the list that runs: environment, address, authorize, rate limits, quota', async (t) => {
  t.same(names(DECISION_STAGES), ['environment', 'address', 'authorize', 'rate limits', 'quota'])
  const ran: string[] = []
  const v = decider({ stages: traced(DECISION_STAGES, ran) }).decide('GET', '/api/v1/users', [], '192.0.2.7', NOW)
  t.notOk(v instanceof Promise, 'every stage answered at once: no promise')
  t.equal((v as Verdict).ok, true)
  t.same(ran, ['environment', 'address', 'authorize', 'rate limits', 'quota'])
})

t.test('a stage added with one line runs in its place, refusing and letting through', async (t) => {
  const stages = [...DECISION_STAGES.slice(0, 3), noDelete, ...DECISION_STAGES.slice(3)]
  t.same(names(stages), ['environment', 'address', 'authorize', 'no delete', 'rate limits', 'quota'])

  const ran: string[] = []
  const d = decider({ stages: traced(stages, ran), limit: { allowed: true, limit: 10, remaining: 9, resetS: 60 } })
  const refused = d.decide('DELETE', '/api/v1/users', [], undefined, NOW) as Verdict
  t.equal(refused.ok, false)
  t.match(refused, { code: 'forbidden', reason: 'no_rule', keyId: 'k1', identity, rule: { path: '/api/v1/users' } })
  t.same(ran, ['environment', 'address', 'authorize', 'no delete'], 'refused before the rate limits: nothing counted')

  ran.length = 0
  const allowed = d.decide('GET', '/api/v1/users', [], undefined, NOW) as Verdict
  t.equal(allowed.ok, true)
  t.match(allowed, { identity, rule: { path: '/api/v1/users' }, rateLimit: { remaining: 9 } }, 'the rate limit stage set its values')
  t.same(ran, ['environment', 'address', 'authorize', 'no delete', 'rate limits', 'quota'])

  ran.length = 0
  const earlier = d.decide('DELETE', '/api/v1/admin', [], undefined, NOW) as Verdict
  t.match(earlier, { ok: false, reason: 'no_rule' })
  t.same(ran, ['environment', 'address', 'authorize'], 'a stage before it refused: it never ran')
})

t.test('a stage that waits hands the rest to its answer', async (t) => {
  const slow: DecisionStage = { ...noDelete, name: 'slow', build: () => async () => undefined }
  const ran: string[] = []
  const stages = traced([...DECISION_STAGES.slice(0, 3), slow, noDelete, ...DECISION_STAGES.slice(3)], ran)
  const d = decider({ stages })
  const waiting = d.decide('DELETE', '/api/v1/users', [], undefined, NOW)
  t.ok(waiting instanceof Promise)
  t.match(await waiting, { ok: false, reason: 'no_rule' })
  t.same(ran, ['environment', 'address', 'authorize', 'slow', 'no delete'])

  ran.length = 0
  t.match(await decider({ stages, async: true }).decide('GET', '/api/v1/users', [], undefined, NOW), { ok: true })
  t.same(ran, ['environment', 'address', 'authorize', 'slow', 'no delete', 'rate limits', 'quota'], 'after an authentication that waited too')
})

t.test('a list without the authorize stage allows nothing', async (t) => {
  const v = decider({ stages: DECISION_STAGES.filter((s) => s.name !== 'authorize') }).decide('GET', '/api/v1/users', [], undefined, NOW)
  t.match(v, { ok: false, code: 'forbidden', reason: 'no_rule' })
})

t.test('the rate limit stage: a limit that refuses, and Redis down under on_error deny', async (t) => {
  const over = decider({ stages: DECISION_STAGES, limit: { allowed: false, reason: 'rate_limited', limit: 1, remaining: 0, resetS: 5, retryAfterS: 5 } })
  t.match(over.decide('GET', '/api/v1/users', [], undefined, NOW), { ok: false, code: 'rate_limited', rateLimit: { retryAfterS: 5 } })
  const down = decider({ stages: DECISION_STAGES, limit: Promise.resolve({ allowed: false, reason: 'rate_limit_unavailable' }) })
  const v = await down.decide('GET', '/api/v1/users', [], undefined, NOW)
  t.match(v, { ok: false, code: 'service_unavailable', reason: 'rate_limit_unavailable' })
  t.notOk('rateLimit' in v, 'no RateLimit-* headers for an unavailable limiter')
})
