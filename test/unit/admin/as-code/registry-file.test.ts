// The parser reads a file's form; its values are checked by the policy (policy/registry-file.ts):
// the file's problems are both, in the order of the file.
import t from 'tap'
import { parseRegistryFile } from '../../../../src/admin/as-code/registry-file.js'
import { registryFileProblems } from '../../../../src/admin/policy/registry-file.js'

const read = (text: string): ReturnType<typeof parseRegistryFile> => {
  const f = parseRegistryFile(text)
  return { ...f, problems: registryFileProblems(f) }
}

t.test('a valid file: its records, with the fields of the table, lists joined', async (t) => {
  const f = read([
    'org: acme',
    'roles:',
    '  reader: { permissions: [users:read, orgs:read], rate_limit: 50/1s }',
    '  empty: { permissions: [] }',
    'orgs:',
    '  acme: { name: Acme }',
    'users:',
    '  alice: { org: acme, role: reader, status: deactivated }',
    ''
  ].join('\n'))
  t.same(f.problems, [])
  t.equal(f.org, 'acme')
  t.same(f.records.role.get('reader')?.fields, { permissions: 'users:read orgs:read', rate_limit: '50/1s' })
  t.same(f.records.role.get('empty')?.fields, { permissions: '' }, 'a role with no permission')
  t.same(f.records.user.get('alice')?.fields, { org: 'acme', role: 'reader', status: 'deactivated' })
  t.same(f.records.user.get('alice')?.place, { line: 8, col: 3 })
  t.same(f.records.user.get('alice')?.fieldPlaces.role, { line: 8, col: 29 })
})

t.test('an empty file asks for nothing', async (t) => {
  for (const text of ['', '# nothing\n', 'roles:\norgs:\nusers:\n']) {
    const f = read(text)
    t.same(f.problems, [], JSON.stringify(text))
    t.equal(f.records.role.size + f.records.org.size + f.records.user.size, 0)
  }
})

t.test('every problem at once, each at its place', async (t) => {
  const f = read([
    'org: acme', //                                              1
    'colour: blue', //                                           2
    'roles:', //                                                 3
    '  "bad role": { permissions: [users:read] }', //            4
    '  r: { permissions: [users:read], rate_limit: fast }', //   5
    'orgs:', //                                                  6
    '  globex: { name: Globex }', //                             7
    'users:', //                                                 8
    '  bob: { org: globex, role: r, name: 7 }', //               9
    ''
  ].join('\n'))
  t.same(f.problems.map((p) => [p.place?.line, p.place?.col, p.path]), [
    [2, 1, 'colour'],
    [4, 3, 'roles.bad role'],
    [5, 47, 'roles.r.rate_limit'],
    [7, 3, 'orgs.globex'],
    [9, 15, 'users.bob.org'],
    [9, 38, 'users.bob.name']
  ])
  t.match(
    f.problems.map((p) => p.message),
    [
      /unknown section/,
      /invalid role "bad role"/,
      /invalid rate limit "fast"/,
      /covers org "acme" only/,
      /covers org "acme" only/,
      /expected a string/
    ]
  )
})

t.test('YAML that does not parse, or repeats a key: a problem with its place', async (t) => {
  const broken = read('roles:\n  reader: [\n')
  t.ok(broken.problems.length > 0)
  t.ok(broken.problems.every((p) => p.place !== undefined))
  const repeated = read('users:\n  a: { org: x, role: r }\n  a: { org: y, role: r }\n')
  t.match(repeated.problems, [{ place: { line: 3 } }], 'a repeated key')
})
