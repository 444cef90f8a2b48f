// What applying a registry file would change, and what it may not do given the registry.
import t from 'tap'
import type {
  DesiredRecord,
  FileProblem,
  Kind,
  RegistryFile,
  RegistryState
} from '../../../../src/admin/model/registry-fields.js'
import { planRegistry, planResult } from '../../../../src/admin/policy/registry-plan.js'

const rec = (
  line: number,
  fields: Record<string,
  string>
): DesiredRecord => ({ fields, place: { line, col: 3 }, fieldPlaces: { role: { line, col: 20 } }, values: {}, problemsBefore: 0 })
const file = (records: Partial<Record<Kind, Record<string, DesiredRecord>>>, org?: string): RegistryFile => ({
  org,
  records: {
    role: new Map(Object.entries(records.role ?? {})),
    org: new Map(Object.entries(records.org ?? {})),
    user: new Map(Object.entries(records.user ?? {})),
    identity: new Map(Object.entries(records.identity ?? {}))
  },
  problems: []
})
const state = (
  records: Partial<Record<Kind, Record<string, Record<string, string>>>>,
  botKeys: Record<string, string[]> = {},
  unfiled: Partial<Record<Kind, Record<string, string[]>>> = {},
  personalKeys: Record<string, string[]> = {},
  identityKeys: Record<string, string[]> = {}
): RegistryState => ({
  records: {
    role: new Map(Object.entries(records.role ?? {})),
    org: new Map(Object.entries(records.org ?? {})),
    user: new Map(Object.entries(records.user ?? {})),
    identity: new Map(Object.entries(records.identity ?? {}))
  },
  botKeys: new Map(Object.entries(botKeys)),
  personalKeys: new Map(Object.entries(personalKeys)),
  identityKeys: new Map(Object.entries(identityKeys)),
  unfiled: {
    role: new Map(Object.entries(unfiled.role ?? {})),
    org: new Map(Object.entries(unfiled.org ?? {})),
    user: new Map(Object.entries(unfiled.user ?? {})),
    identity: new Map(Object.entries(unfiled.identity ?? {}))
  }
})
const registry = state({
  role: { reader: { permissions: 'users:read' }, writer: { permissions: 'users:*', description: 'w' } },
  org: { acme: { name: 'Acme' }, globex: { name: 'Globex' } },
  user: {
    alice: { org: 'acme', role: 'reader', status: 'deactivated' },
    gina: { org: 'globex', role: 'writer', status: 'active' }
  }
}, { writer: ['BotKey1'] })

t.test('planRegistry: creates, changes field by field, and with prune deletes; a user\'s status kept unless named', async (t) => {
  const rows: Array<[string, RegistryFile, boolean, unknown[]]> = [
    ['nothing to do', file({ role: { reader: rec(2, { permissions: 'users:read' }) } }), false, []],
    ['a new role and user; a new user active', file({ role: { ops: rec(2, { permissions: '' }) }, user: { bob: rec(4, { org: 'acme', role: 'ops' }) } }), false, [
      { op: 'create', kind: 'role', name: 'ops', fields: [{ field: 'permissions', to: '' }] },
      {
        op: 'create',
        kind: 'user',
        name: 'bob',
        fields: [{ field: 'org', to: 'acme' }, { field: 'role', to: 'ops' }, { field: 'status', to: 'active' }]
      }
    ]],
    ['a field left out is removed; a status left out is kept', file({ role: { writer: rec(2, { permissions: 'users:read' }) }, user: { alice: rec(4, { org: 'globex', role: 'reader' }) } }), false, [
      {
        op: 'change',
        kind: 'role',
        name: 'writer',
        fields: [
          { field: 'permissions', from: 'users:*', to: 'users:read' },
          { field: 'description', from: 'w', to: undefined }
        ]
      },
      {
        op: 'change',
        kind: 'user',
        name: 'alice',
        fields: [{ field: 'org', from: 'acme', to: 'globex' }],
        fromOrg: 'acme'
      }
    ]],
    ['prune: what the file does not name', file({ role: { reader: rec(2, { permissions: 'users:read' }), writer: rec(3, { permissions: 'users:*', description: 'w' }) }, user: { alice: rec(4, { org: 'acme', role: 'reader' }) } }), true, [
      { op: 'delete', kind: 'org', name: 'acme', fields: [{ field: 'name', from: 'Acme' }] },
      { op: 'delete', kind: 'org', name: 'globex' },
      { op: 'delete', kind: 'user', name: 'gina', fromOrg: 'globex' }
    ]],
    ['prune with org: that org\'s users and record only, never roles', file({ org: { acme: rec(2, { name: 'Acme' }) } }, 'acme'), true, [
      { op: 'delete', kind: 'user', name: 'alice', fromOrg: 'acme' }
    ]]
  ]
  for (const [what, f, prune, expected] of rows) {
    const plan = planRegistry(f, registry, prune)
    t.same(plan.problems, [], `${what}: no problem`)
    t.match(plan.changes, expected, what)
    t.equal(plan.changes.length, expected.length, `${what}: ${expected.length} change(s)`)
  }
})

t.test('planRegistry: a user\'s role must exist as the file would leave the registry; prune keeps what is in use', async (t) => {
  const rows: Array<[string, RegistryFile, boolean, Array<[number | undefined, string, string | RegExp]>]> = [
    [
      'a role that exists nowhere',
      file({ user: { bob: rec(4, { org: 'acme', role: 'ghost' }) } }),
      false,
      [[4, 'users.bob.role', 'role "ghost" does not exist (neither in the file nor in the registry)']]
    ],
    [
      'a role only in the file',
      file({ role: { ops: rec(2, { permissions: '' }) }, user: { bob: rec(4, { org: 'acme', role: 'ops' }) } }),
      false,
      []
    ],
    ['a role the prune would delete', file({ role: { writer: rec(2, { permissions: 'users:*' }) }, user: { bob: rec(4, { org: 'acme', role: 'reader' }), alice: rec(5, { org: 'acme', role: 'reader' }) } }), true, [
      [4, 'users.bob.role', 'role "reader" would be pruned'], [5, 'users.alice.role', 'role "reader" would be pruned']
    ]],
    ['pruning a role BOT keys act with, and one a kept user acts with', file({ role: { reader: rec(2, { permissions: 'users:read' }) }, user: { gina: rec(4, { org: 'globex', role: 'reader' }), alice: rec(5, { org: 'acme', role: 'reader' }) } }), true, [
      [undefined, 'roles.writer', /--prune would delete role "writer", which active BOT keys act with \(BotKey1\)/]
    ]],
    [
      'without prune, a role the file leaves out stays for whoever acts with it',
      file({ user: { alice: rec(4, { org: 'acme', role: 'reader' }) } }),
      false,
      []
    ]
  ]
  for (const [what, f, prune, expected] of rows) {
    const { problems } = planRegistry(f, registry, prune)
    t.same(problems.map((p) => [p.place?.line, p.path]), expected.map(([line, path]) => [line, path]), `${what}: where`)
    t.match(problems.map((p) => p.message), expected.map(([, , message]) => message), `${what}: why`)
  }
  const users = planRegistry(
    file({
      role: { writer: rec(2, { permissions: 'users:*' }) },
      user: { alice: rec(4, { org: 'acme', role: 'reader' }) }
    }),
    state({
      role: { reader: {}, writer: {} },
      user: { alice: { role: 'reader' }, bob: { org: 'acme', role: 'reader' } }
    }),
    true
  )
  t.match(users.problems.map((p) => p.message), [/would be pruned/], 'a kept user\'s role pruned')
})

t.test('planResult: the changes, or every problem in the order of the file, those at no place last', async (t) => {
  const p = (
    line: number | undefined,
    path: string
  ): FileProblem => ({ place: line === undefined ? undefined : { line, col: 1 }, path, message: path })
  t.same(
    planResult([], { changes: [{ op: 'create', kind: 'role', name: 'r', fields: [] }], problems: [] }),
    { ok: true, changes: [{ op: 'create', kind: 'role', name: 'r', fields: [] }] }
  )
  const result = planResult(
    [p(9, 'own 9'), p(2, 'own 2')],
    { changes: [], problems: [p(undefined, 'prune'), p(5, 'ref 5')] }
  )
  t.same(result.ok ? [] : result.problems.map((x) => x.path), ['own 2', 'ref 5', 'own 9', 'prune'])
  t.equal(result.ok, false)
})

t.test('prune: a record holding fields a file cannot carry is never deleted; a policy deleted is named', async (t) => {
  const held = state(
    { org: { acme: { name: 'Acme' }, capped: { key_max_ttl: '30d' }, oddco: { name: 'Odd' } } },
    {},
    { org: { oddco: ['billing_plan'] } }
  )
  const plan = planRegistry(file({ org: { acme: rec(2, { name: 'Acme' }) } }), held, true)
  t.same(plan.changes, [{ op: 'delete', kind: 'org', name: 'capped', fields: [{ field: 'key_max_ttl', from: '30d' }], fromOrg: undefined }])
  t.same(plan.problems, [{
    place: undefined,
    path: 'orgs.oddco',
    message: '--prune would delete org "oddco", which holds fields a registry file cannot carry (billing_plan): ' +
      'keep it in the file, or remove those fields first'
  }])
  t.same(planRegistry(file({ org: { acme: rec(2, { name: 'Acme' }) } }), held, false).problems, [], 'without prune: kept')
})

t.test('prune: a user\'s deletion names the active personal keys it revokes', async (t) => {
  const held = state({ role: { reader: { permissions: 'users:read' } }, user: { alice: { org: 'acme', role: 'reader' }, bob: { org: 'acme', role: 'reader' } } },
    {}, {}, { alice: ['AliceKey1', 'AliceKey2'] })
  const kept = file({ role: { reader: rec(2, { permissions: 'users:read' }) } })
  t.match(planRegistry(kept, held, true).changes, [
    { op: 'delete', kind: 'user', name: 'alice', revokesKeys: ['AliceKey1', 'AliceKey2'] },
    { op: 'delete', kind: 'user', name: 'bob', revokesKeys: undefined }
  ], 'alice\'s keys are revoked with her; bob has none')
  t.same(planRegistry(kept, held, false).changes, [], 'without prune: nothing')
})

t.test('planRegistry: identities created, changed, pruned; one with active keys never pruned; never moved; external ids unique', async (t) => {
  const held = state({
    identity: {
      c1: { org: 'acme', external_id: 'x1', meta: '{"plan":"pro"}', credits: '50' },
      c2: { org: 'acme', external_id: 'x2' },
      c3: { org: 'globex', external_id: 'x3' }
    }
  }, {}, {}, {}, { c2: ['IdKey1'] })
  const want = file({
    identity: {
      c1: rec(3, { org: 'acme', external_id: 'x1', meta: '{ "plan": "pro" }', quota: '100/day' }),
      c2: rec(4, { org: 'acme', external_id: 'x2' }),
      c4: rec(5, { org: 'acme', external_id: 'x4', credits: '10' })
    }
  })
  const plan = planRegistry(want, held, true)
  t.same(plan.problems, [], 'c3 has no key: pruned')
  t.match(plan.changes, [
    { op: 'change', kind: 'identity', name: 'c1', fields: [{ field: 'quota', from: undefined, to: '100/day' }], fromOrg: 'acme' },
    { op: 'create', kind: 'identity', name: 'c4', fields: [{ field: 'org', to: 'acme' }, { field: 'external_id', to: 'x4' }, { field: 'credits', to: '10' }] },
    { op: 'delete', kind: 'identity', name: 'c3', fromOrg: 'globex' }
  ], 'meta compared as stored JSON; credits kept when the file does not name them')
  t.equal(plan.changes.length, 3)

  const withoutC2 = file({ identity: { c1: rec(3, { org: 'acme', external_id: 'x1', meta: '{"plan":"pro"}', credits: '50' }) } })
  const refused = planRegistry(withoutC2, held, true)
  t.match(refused.problems, [{ path: 'identities.c2', message: /--prune would delete identity "c2", which has 1 active key\(s\) \(IdKey1\)/ }])
  t.notOk(refused.changes.some((c) => c.name === 'c2'), 'c2 not deleted')
  t.same(planRegistry(withoutC2, held, false).changes, [], 'without prune: nothing')

  const moved = planRegistry(file({ identity: { c3: rec(3, { org: 'acme', external_id: 'x3' }) } }), held, false)
  t.match(moved.problems, [{ path: 'identities.c3.org', message: /never moves to another org/ }])
  const taken = planRegistry(file({ identity: { c9: rec(3, { org: 'acme', external_id: 'x2' }) } }), held, false)
  t.match(taken.problems, [{ path: 'identities.c9.external_id', message: 'external id "x2" already names identity "c2" in org acme' }])
  const scoped = planRegistry(file({ identity: {} }, 'acme'), held, true)
  t.notOk(scoped.changes.some((c) => c.name === 'c3'), 'a file with org: prunes that org\'s identities only')
})
