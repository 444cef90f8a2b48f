// Shadow rules (src/decision/shadow-rules.ts): the authorization outcome of the live and
// the shadow rule sets, compared; a difference is a note, agreement nothing. A table,
// then the decider: the note rides on the verdict (synchronous or not), the answer
// never changes, and without shadow rules there is no note at all.
import t from 'tap'
import { createDecider } from '../../../src/decision/decide-request.js'
import type { Authentication } from '../../../src/decision/authenticate-request.js'
import type { Identity } from '../../../src/decision/identity.js'
import { compileRules } from '../../../src/decision/match-rule.js'
import { createShadowDecider } from '../../../src/decision/shadow-rules.js'
import type { ShadowNote, Verdict } from '../../../src/decision/verdict.js'
import { PROXIED_METHODS } from '../../../src/http/methods.js'
import { Grants } from '../../../src/registry/records.js'

const reader: Identity = { keyId: 'k1', type: 'bot', userId: undefined, org: 'acme', role: 'reader', grants: new Grants(['users:read']) }
const live = compileRules([
  { method: 'GET', path: '/api/v1/users', permissions: ['users:read'] },
  { method: 'POST', path: '/api/v1/users', permissions: ['users:write'] },
  { method: 'GET', path: '/api/v1/orgs/:org/x', permissions: [], org_param: 'org' }
], PROXIED_METHODS)
const shadow = compileRules([
  { method: 'GET', path: '/api/v1/users', permissions: ['users:list'] },
  { method: 'POST', path: '/api/v1/users', permissions: ['users:read'] },
  { method: 'GET', path: '/api/v1/orgs/:org/x', permissions: [], org_param: 'org' }
], PROXIED_METHODS)
const decideShadow = createShadowDecider(live, shadow)
const allowed = { ok: true } as unknown as Verdict
const refused = (reason: string): Verdict => ({ ok: false, reason } as unknown as Verdict)

t.test('the table: live outcome, shadow outcome, the note', async (t) => {
  const rows: Array<[string, string, string, Verdict, ShadowNote | undefined]> = [
    ['live allows, shadow refuses', 'GET', '/api/v1/users', allowed, { rule: '0', live: 'allow', shadow: 'missing_permission' }],
    ['live refuses, shadow allows', 'POST', '/api/v1/users', refused('missing_permission'), { rule: '1', live: 'missing_permission', shadow: 'allow' }],
    ['both allow', 'GET', '/api/v1/orgs/acme/x', allowed, undefined],
    ['both refuse alike', 'GET', '/api/v1/orgs/globex/x', refused('org_mismatch'), undefined],
    ['no rule in either', 'GET', '/api/v1/other', refused('no_rule'), undefined],
    ['refused elsewhere (an address): the live rules are asked', 'GET', '/api/v1/users', refused('address_not_allowed'), { rule: '0', live: 'allow', shadow: 'missing_permission' }]
  ]
  for (const [what, method, path, verdict, note] of rows) t.same(decideShadow(reader, method, path, verdict), note, what)
  const noShadowRule = createShadowDecider(live, compileRules([{ method: 'POST', path: '/api/v1/users', permissions: [] }], PROXIED_METHODS))
  t.same(noShadowRule(reader, 'GET', '/api/v1/users', allowed), { rule: 'none', live: 'allow', shadow: 'no_rule' }, 'no shadow rule matches: none')
})

t.test('the decider: the note on the verdict, the answer unchanged, nothing without shadow rules', async (t) => {
  const auth: Authentication = { ok: true, identity: reader }
  const notes: ShadowNote[] = []
  const make = (withShadow: boolean, async = false): ReturnType<typeof createDecider> => createDecider({
    authenticate: () => async ? Promise.resolve(auth) : auth,
    matchRule: live,
    routeOf: () => undefined,
    shadow: withShadow ? decideShadow : undefined,
    onShadow: (n) => { notes.push(n) }
  })
  const off = make(false).decide('GET', '/api/v1/users', [], undefined, 0) as Verdict
  t.equal(off.ok, true)
  t.equal(off.shadow, undefined, 'no shadow rules: no note')
  t.equal(notes.length, 0, 'and nothing counted')
  const on = make(true).decide('GET', '/api/v1/users', [], undefined, 0) as Verdict
  t.equal(on.ok, true, 'the live answer stands')
  t.same(on.shadow, { rule: '0', live: 'allow', shadow: 'missing_permission' })
  t.equal(notes.length, 1, 'counted once')
  const later = make(true, true).decide('POST', '/api/v1/users', [], undefined, 0)
  t.ok(later instanceof Promise, 'a decision that waited for its records')
  const v = await later
  t.match(v, { ok: false, reason: 'missing_permission', shadow: { rule: '1', live: 'missing_permission', shadow: 'allow' } })
})
