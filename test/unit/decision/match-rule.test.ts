import t from 'tap'
import { compileRules as compile, RuleError } from '../../../src/decision/match-rule.js'
import { PROXIED_METHODS } from '../../../src/http/methods.js'
import type { RuleConfig } from '../../../src/config/schema.js'

const compileRules = (rules: readonly RuleConfig[]): ReturnType<typeof compile> => compile(rules, PROXIED_METHODS)

const rule = (method: string, path: string, permissions: string[] = [], orgParam?: string): RuleConfig =>
  orgParam === undefined ? { method, path, permissions } : { method, path, permissions, org_param: orgParam }

t.test('precedence: static beats :param beats *, explicit method beats GET-for-HEAD beats "*"', async (t) => {
  const match = compileRules([
    rule('GET', '/api/v1/users/:id', ['users:read']),
    rule('GET', '/api/v1/users/me', ['self:read']),
    rule('*', '/api/v1/users/*', ['users:any']),
    rule('*', '/api/v1/users/:id', ['users:write']),
    rule('HEAD', '/api/v1/heads', ['heads:head']),
    rule('GET', '/api/v1/heads', ['heads:get'])
  ])
  const cases: Array<[string, string, string[] | null]> = [
    ['GET', '/api/v1/users/me', ['self:read']],
    ['GET', '/api/v1/users/42', ['users:read']],
    ['HEAD', '/api/v1/users/42', ['users:read']],
    ['DELETE', '/api/v1/users/42', ['users:write']],
    ['GET', '/api/v1/users/42/photos', ['users:any']],
    ['HEAD', '/api/v1/heads', ['heads:head']],
    ['GET', '/api/v1/heads', ['heads:get']],
    ['POST', '/api/v1/heads', null],
    ['GET', '/api/v1/users', null],
    ['GET', '/api/v1/Users/me', null]
  ]
  for (const [method, path, expected] of cases) {
    const m = match(method, path)
    t.same(m === null ? null : m.rule.permissions, expected, `${method} ${path}`)
  }
})

t.test('parameters are extracted by the rule\'s own names; scope lists the permissions', async (t) => {
  const match = compileRules([rule('*', '/api/v1/orgs/:org/*', ['orgs:read', 'orgs:list'], 'org')])
  const m = match('PATCH', '/api/v1/orgs/acme/projects/7')
  t.equal(m?.params.org, 'acme')
  t.equal(m?.rule.orgParam, 'org')
  t.equal(m?.rule.scope, 'orgs:read orgs:list')
  t.equal(match('GET', '/api/v1/orgs/acme'), null, 'a final * needs at least one more segment')
})

t.test('ambiguous and invalid rules are configuration errors naming the rules', async (t) => {
  const bad: Array<[RuleConfig[], RegExp]> = [
    [[rule('GET', '/a/:x'), rule('GET', '/a/:y')], /rules\[1\]: ambiguous with rules\[0\]/],
    [[rule('*', '/a/*'), rule('*', '/a/*')], /rules\[1\]: ambiguous with rules\[0\]/],
    [[rule('GET', '/a/*/b')], /rules\[0\]\.path: `\*` may only be the last segment/],
    [[rule('GET', '/a//b')], /rules\[0\]\.path: invalid segment/],
    [[rule('GET', '/a/../b')], /rules\[0\]\.path: invalid segment/],
    [[rule('GET', '/a/:x/:x')], /appears twice/],
    [[rule('GET', '/a/:x', [], 'org')], /rules\[0\]\.org_param/],
    [[rule('FETCH', '/a')], /unknown HTTP method/]
  ]
  for (const [rules, message] of bad) {
    t.throws(() => compileRules(rules), message)
    try { compileRules(rules) } catch (err) { t.ok(err instanceof RuleError) }
  }
})

t.test('the same shape under different methods is not ambiguous', async (t) => {
  t.doesNotThrow(() => compileRules([rule('GET', '/a/:x'), rule('POST', '/a/:y'), rule('*', '/a/:z')]))
})
