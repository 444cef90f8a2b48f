// The checks of a registry file's values: each field, each record's name, what a kind requires,
// the org a file covers; with the parser's problems of form, in the order of the file.
import t from 'tap'
import {
  KINDS,
  type DesiredRecord,
  type FileProblem,
  type Kind,
  type RegistryFile
} from '../../../../src/admin/model/registry-fields.js'
import { registryFileProblems } from '../../../../src/admin/policy/registry-file.js'

const NAME_HELP = '(letters, digits and _.@:- ; up to 128 characters)'

/** A record as the parser reads it, at `line`: each field's value at column 10, 20, ... (a list's items one column apart). */
function rec (kind: Kind, line: number, fields: Record<string, string>, problemsBefore = 0): DesiredRecord {
  const r: DesiredRecord = { fields: {}, place: { line, col: 3 }, fieldPlaces: {}, values: {}, problemsBefore }
  Object.entries(fields).forEach(([name, value], i) => {
    const col = 10 * (i + 1)
    r.fieldPlaces[name] = { line, col }
    const list = KINDS[kind].fields.find((f) => f.name === name)?.list === true
    const items = list ? value.split(' ').filter((v) => v !== '') : [value]
    r.values[name] = items.map((v, n) => ({ value: v, place: { line, col: col + n } }))
    if (list || value !== '') r.fields[name] = items.join(' ')
  })
  return r
}

function file (records: Partial<Record<Kind, Record<string, DesiredRecord>>>, o: { org?: string, problems?: FileProblem[] } = {}): RegistryFile {
  return {
    org: o.org,
    orgPlace: o.org === undefined ? undefined : { line: 1, col: 6 },
    records: {
      role: new Map(Object.entries(records.role ?? {})),
      org: new Map(Object.entries(records.org ?? {})),
      user: new Map(Object.entries(records.user ?? {})),
      identity: new Map(Object.entries(records.identity ?? {}))
    },
    problems: o.problems ?? []
  }
}

const ok = {
  role: { reader: rec('role', 3, { permissions: 'users:read' }) },
  org: { acme: rec('org', 5, { name: 'Acme' }) },
  user: { alice: rec('user', 7, { org: 'acme', role: 'reader' }) }
}

t.test('each record\'s checks, with the place and path of the value they concern', async (t) => {
  const rows: Array<[string, RegistryFile, Array<[number, number, string, string | RegExp]>]> = [
    ['a valid file', file(ok, { org: 'acme' }), []],
    [
      'an org covered that is no name',
      file({}, { org: 'bad org' }),
      [[1, 6, 'org', `invalid org "bad org" ${NAME_HELP}`]]
    ],
    ['a permission outside the grammar, item by item', file({ role: { r: rec('role', 2, { permissions: 'users:read Users orders' }) } }), [
      [2, 11, 'roles.r.permissions[1]', /invalid permission "Users"/], [
        2,
        12,
        'roles.r.permissions[2]',
        /invalid permission "orders"/
      ]
    ]],
    ['a long description and a bad limit', file({ role: { r: rec('role', 2, { permissions: '', description: 'x'.repeat(1001), rate_limit: 'fast' }) } }), [
      [
        2,
        20,
        'roles.r.description',
        'the description is longer than 1000 characters'
      ], [2, 30, 'roles.r.rate_limit', /invalid rate limit "fast"/]
    ]],
    ['a role that is no name, without permissions', file({ role: { 'bad role': rec('role', 2, { description: 'd' }) } }), [
      [2, 3, 'roles.bad role', 'permissions is required'], [
        2,
        3,
        'roles.bad role',
        `invalid role "bad role" ${NAME_HELP}`
      ]
    ]],
    ['an org record: a long name, a bad limit', file({ org: { acme: rec('org', 2, { name: 'x'.repeat(201), rate_limit: '1/1w' }) } }), [
      [
        2,
        10,
        'orgs.acme.name',
        'the org name is longer than 200 characters'
      ], [2, 20, 'orgs.acme.rate_limit', /invalid rate limit "1\/1w"/]
    ]],
    [
      'an empty org record',
      file({ org: { acme: rec('org', 2, {}) } }),
      [[2, 3, 'orgs.acme', 'an org record needs a name, a rate_limit or a key_max_ttl']]
    ],
    [
      'an org record that is no name',
      file({ org: { 'bad org': rec('org', 2, { name: 'B' }) } }),
      [[2, 3, 'orgs.bad org', `invalid org "bad org" ${NAME_HELP}`]]
    ],
    ['an empty org record the parser already faulted', file({ org: { acme: rec('org', 2, {}, 1) } }, { problems: [{ place: { line: 2, col: 9 }, path: 'orgs.acme.colour', message: 'unknown field' }] }), [
      [2, 9, 'orgs.acme.colour', 'unknown field']
    ]],
    [
      'a user without org and role',
      file({ user: { alice: rec('user', 2, { name: 'Alice' }) } }),
      [[2, 3, 'users.alice', 'org is required'], [2, 3, 'users.alice', 'role is required']]
    ],
    ['a user\'s org and role that are no names, an empty org named', file({ user: { alice: rec('user', 2, { org: '', role: 'bad role' }) } }), [
      [2, 10, 'users.alice.org', `invalid org "" ${NAME_HELP}`], [
        2,
        20,
        'users.alice.role',
        `invalid role "bad role" ${NAME_HELP}`
      ]
    ]],
    ['a user id a BOT key\'s assertion could be; a status', file({ user: { 'bot:x': rec('user', 2, { org: 'acme', role: 'r', status: 'gone', email: `${'e'.repeat(321)}` }) } }), [
      [2, 3, 'users.bot:x', /an id starting with "bot:"/], [2, 30, 'users.bot:x.status', 'expected active or deactivated'], [
        2,
        40,
        'users.bot:x.email',
        'the email is longer than 320 characters'
      ]
    ]],
    ['a file covering one org names another', file({ org: { globex: rec('org', 3, { name: 'G' }) }, user: { gina: rec('user', 5, { org: 'globex', role: 'reader' }) } }, { org: 'acme' }), [
      [3, 3, 'orgs.globex', 'the file covers org "acme" only'], [
        5,
        10,
        'users.gina.org',
        'the file covers org "acme" only'
      ]
    ]],
    ['the parser\'s problems, merged in the order of the file', file({ role: { r: rec('role', 4, { permissions: 'Bad' }) } }, { problems: [{ place: { line: 6, col: 1 }, path: 'colour', message: 'unknown section' }, { place: { line: 2, col: 1 }, path: '', message: 'a YAML warning' }] }), [
      [2, 1, '', 'a YAML warning'], [
        4,
        10,
        'roles.r.permissions[0]',
        /invalid permission "Bad"/
      ], [6, 1, 'colour', 'unknown section']
    ]]
  ]
  for (const [what, f, expected] of rows) {
    const problems = registryFileProblems(f)
    t.same(
      problems.map((p) => [p.place?.line, p.place?.col, p.path]),
      expected.map(([line, col, path]) => [line, col, path]),
      `${what}: where`
    )
    t.match(problems.map((p) => p.message), expected.map(([, , , message]) => message), `${what}: why`)
  }
})
