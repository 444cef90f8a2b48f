// What any admin input must be: names, rate limits, permissions, a role's and a user's shape.
import t from 'tap'
import {
  checkName, checkPermissions, checkRateLimit, nameProblem, nameProblems, rateLimitProblem, roleShapeProblems, userShape, userShapeProblems
} from '../../../../src/admin/policy/names.js'
import { allowed, judge, refused, verdict } from '../../../helpers/admin-policy.js'

const NAME_HELP = '(letters, digits and _.@:- ; up to 128 characters)'

t.test('names: letters, digits and _.@:-, up to 128 characters, starting with a letter or digit', async (t) => {
  const rows: Array<[string, string | undefined]> = [
    ['acme', undefined], ['alice@example.com', undefined], ['a.b:c-d_e', undefined], ['x'.repeat(128), undefined],
    ['x'.repeat(129), `invalid org "${'x'.repeat(129)}" ${NAME_HELP}`],
    ['', `invalid org "" ${NAME_HELP}`], [
      '-acme',
      `invalid org "-acme" ${NAME_HELP}`
    ], ['a b', `invalid org "a b" ${NAME_HELP}`], ['ünï', `invalid org "ünï" ${NAME_HELP}`]
  ]
  for (const [value, problem] of rows) {
    t.equal(nameProblem('org', value), problem, JSON.stringify(value))
    judge(
      t,
      verdict(() => { checkName('org', value) }),
      problem === undefined
        ? allowed()
        : refused({
          kind: 'invalid',
          message: problem,
          details: undefined,
          audit: 'error'
        }),
      `checkName ${JSON.stringify(value)}`
    )
  }
  t.same(
    nameProblems('role', 'role', 'bad role'),
    [{ field: 'role', reason: `invalid role "bad role" ${NAME_HELP}`, kind: 'invalid' }]
  )
  t.same(nameProblems('role', 'role', 'reader'), [])
})

t.test('rate limits: <count>/<period>, the one parser\'s grammar', async (t) => {
  const rows: Array<[string, boolean]> = [
    ['100/1s', true],
    ['5000/1h', true],
    ['1/30d', true],
    ['fast', false],
    ['0/1s', false],
    ['10/1w', false],
    ['', false]
  ]
  for (const [text, ok] of rows) {
    t.equal(rateLimitProblem(text) === undefined, ok, text)
    judge(
      t,
      verdict(() => { checkRateLimit(text) }),
      ok
        ? allowed()
        : refused({
          kind: 'invalid',
          message: new RegExp(`^invalid rate limit "${text}": a rate limit is <count>/<period>`)
        }),
      `checkRateLimit ${text}`
    )
  }
})

t.test('a role\'s permissions: the grammar, every bad one named with its field', async (t) => {
  const bad = (p: string): string => `invalid permission "${p}" (expected resource:action, resource:* or *, in lower case)`
  const rows: Array<[string[], unknown]> = [
    [[], allowed()],
    [['users:read', 'users:*', '*', 'keygate:org:admin'], allowed()],
    [
      ['Users:Read'],
      refused({
        kind: 'invalid',
        message: bad('Users:Read'),
        details: [{ field: 'permissions', reason: bad('Users:Read') }],
        audit: 'error'
      })
    ],
    [
      ['users', 'users:read', 'a b:c'],
      refused({
        kind: 'invalid',
        message: `${bad('users')}; ${bad('a b:c')}`,
        details: [{ field: 'permissions', reason: bad('users') }, { field: 'permissions', reason: bad('a b:c') }]
      })
    ]
  ]
  for (const [permissions, expected] of rows) {
    judge(
      t,
      verdict(() => { checkPermissions(permissions) }),
      expected,
      JSON.stringify(permissions)
    )
  }
  t.same(
    roleShapeProblems('bad role', ['nope']),
    [{ field: 'name', reason: `invalid role "bad role" ${NAME_HELP}` }, { field: 'permissions', reason: bad('nope') }],
    'a role\'s name and permissions, as details'
  )
  t.same(roleShapeProblems('reader', ['users:read']), [])
})

t.test('a user\'s id and org: names, and no id a BOT key\'s assertion subject could be', async (t) => {
  const botId = (id: string): string => `invalid user id "${id}": an id starting with "bot:" names a BOT key in signed assertions`
  const rows: Array<[string, string, Array<{ field: string, reason: string }>]> = [
    ['alice', 'acme', []],
    ['bot:x', 'acme', [{ field: 'id', reason: botId('bot:x') }]],
    ['BOT:X', 'acme', [{ field: 'id', reason: botId('BOT:X') }]],
    ['robot:x', 'acme', []],
    [
      'bad id',
      'bad org',
      [
        { field: 'id', reason: `invalid user id "bad id" ${NAME_HELP}` },
        { field: 'org', reason: `invalid org "bad org" ${NAME_HELP}` }
      ]
    ]
  ]
  for (const [id, org, expected] of rows) {
    t.same(userShapeProblems(id, org), expected, `${id} in ${org}`)
    t.ok(userShape(id, org).every((p) => p.kind === 'invalid'), 'each an invalid input')
  }
})
