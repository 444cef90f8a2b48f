// Shadow restrictions (src/decision/shadow-restriction.ts): what a key's shadow scope or
// addresses would refuse of a request its live decision allowed, by the address and
// authorize stages' own checks; a key without one, nothing. Then the decider: the answer
// unchanged, the refusal told (per key) and noted, nothing for a refused request.
import t from 'tap'
import { createDecider } from '../../../src/decision/decide-request.js'
import type { Authentication } from '../../../src/decision/authenticate-request.js'
import type { Identity } from '../../../src/decision/identity.js'
import { compileRules } from '../../../src/decision/match-rule.js'
import { shadowRestrictionRefusal } from '../../../src/decision/shadow-restriction.js'
import type { ShadowNote } from '../../../src/decision/verdict.js'
import { PROXIED_METHODS } from '../../../src/http/methods.js'
import { Grants, INVALID, restrictionOf, type KeyRestriction } from '../../../src/registry/records.js'

const rules = compileRules([
  { method: 'GET', path: '/api/v1/users', permissions: ['users:read'] },
  { method: 'POST', path: '/api/v1/users', permissions: ['users:write'] }
], PROXIED_METHODS)
const role = new Grants(['users:read', 'users:write'])
const shadowOf = (scope: string | undefined, cidrs: string | undefined): KeyRestriction => {
  const r = restrictionOf(scope, cidrs)
  if (r === undefined || r === INVALID) throw new Error('not a restriction')
  return r
}
const writer = (shadow?: KeyRestriction): Identity => ({
  keyId: 'k1', type: 'bot', userId: undefined, org: 'acme', role: 'writer', grants: role, roleGrants: role, shadowRestriction: shadow
})
const ruleOf = (method: string, path: string): NonNullable<ReturnType<typeof rules>>['rule'] => {
  const m = rules(method, path)
  if (m === null) throw new Error('no rule')
  return m.rule
}

t.test('the table: shadow restriction, request, what it would refuse', async (t) => {
  const rows: Array<[string, KeyRestriction | undefined, string, string | undefined, string | undefined]> = [
    ['no shadow restriction', undefined, 'POST', '10.1.1.1', undefined],
    ['a scope without the permission', shadowOf('users:read', undefined), 'POST', '10.1.1.1', 'missing_permission'],
    ['a scope with it', shadowOf('users:read', undefined), 'GET', '10.1.1.1', undefined],
    ['addresses without the client', shadowOf(undefined, '10.0.0.0/8'), 'GET', '192.0.2.1', 'address_not_allowed'],
    ['addresses with the client', shadowOf(undefined, '10.0.0.0/8'), 'GET', '10.1.1.1', undefined],
    ['no client address known', shadowOf(undefined, '10.0.0.0/8'), 'GET', undefined, 'address_not_allowed'],
    ['both: the address first, as the stages run', shadowOf('users:read', '10.0.0.0/8'), 'POST', '192.0.2.1', 'address_not_allowed']
  ]
  for (const [what, shadow, method, client, refusal] of rows) {
    t.equal(shadowRestrictionRefusal(writer(shadow), ruleOf(method, '/api/v1/users'), client), refusal, what)
  }
})

t.test('the decider: never changes the answer; told and noted for allowed requests only', async (t) => {
  const told: Array<[string, string, string, string]> = []
  const notes: ShadowNote[] = []
  const decide = (identity: Identity, method: string): ReturnType<ReturnType<typeof createDecider>['decide']> => {
    const auth: Authentication = { ok: true, identity }
    return createDecider({
      authenticate: () => auth,
      matchRule: rules,
      routeOf: () => undefined,
      onShadow: (n) => notes.push(n),
      onShadowRestriction: (i, m, p, reason) => told.push([i.keyId, m, p, reason])
    }).decide(method, '/api/v1/users', [], '192.0.2.1', Date.now())
  }
  const v = decide(writer(shadowOf(undefined, '10.0.0.0/8')), 'POST')
  t.notOk(v instanceof Promise)
  t.match(v, { ok: true, shadow: { rule: 'key_restriction', live: 'allow', shadow: 'address_not_allowed' } }, 'allowed, noted')
  t.same(told, [['k1', 'POST', '/api/v1/users', 'address_not_allowed']])
  t.same(notes, [{ rule: 'key_restriction', live: 'allow', shadow: 'address_not_allowed' }], 'and counted')
  const refusedLive = decide({ ...writer(shadowOf(undefined, '10.0.0.0/8')), grants: new Grants([]) }, 'POST')
  t.match(refusedLive, { ok: false, reason: 'missing_permission' })
  t.equal(told.length, 1, 'a request refused live: nothing told')
  const none = decide(writer(), 'POST')
  t.match(none, { ok: true })
  t.notOk('shadow' in (none as object), 'no shadow restriction: no note')
})
