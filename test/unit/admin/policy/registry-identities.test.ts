// What a registry file may not do with identities: move one to another org, or give one
// external id to two identities of an org, as the file would leave the registry.
import t from 'tap'
import type { Change, DesiredRecord, RegistryFile, RegistryState } from '../../../../src/admin/model/registry-fields.js'
import { identityProblems } from '../../../../src/admin/policy/registry-identities.js'

const rec = (line: number, fields: Record<string, string>): DesiredRecord => ({
  fields,
  place: { line, col: 3 },
  fieldPlaces: { org: { line, col: 10 }, external_id: { line, col: 20 } },
  values: {},
  problemsBefore: 0
})
const file = (identities: Record<string, DesiredRecord>): RegistryFile => ({
  org: undefined,
  records: { role: new Map(), org: new Map(), user: new Map(), identity: new Map(Object.entries(identities)) },
  problems: []
})
const state = (identities: Record<string, Record<string, string>>): RegistryState => ({
  records: { role: new Map(), org: new Map(), user: new Map(), identity: new Map(Object.entries(identities)) },
  botKeys: new Map(),
  personalKeys: new Map(),
  identityKeys: new Map(),
  unfiled: { role: new Map(), org: new Map(), user: new Map(), identity: new Map() }
})
const pruned = (name: string): Change => ({ op: 'delete', kind: 'identity', name, fields: [] })

const REGISTRY = state({
  c1: { org: 'acme', external_id: 'e1' },
  c2: { org: 'acme', external_id: 'e2' },
  g1: { org: 'globex', external_id: 'e1' }
})

t.test('identityProblems: each problem at its place in the file, with its path', async (t) => {
  const rows: Array<[string, RegistryFile, readonly Change[], unknown[]]> = [
    ['the registry as it is', file({ c1: rec(2, { org: 'acme', external_id: 'e1' }) }), [], []],
    ['a new identity', file({ c3: rec(2, { org: 'acme', external_id: 'e3' }) }), [], []],
    ['one moved to another org', file({ c1: rec(4, { org: 'globex', external_id: 'e1' }) }), [], [{
      place: { line: 4, col: 10 },
      path: 'identities.c1.org',
      message: 'identity "c1" is in org "acme": an identity never moves to another org'
    }]],
    ['another\'s external id, in the registry', file({ c3: rec(6, { org: 'acme', external_id: 'e2' }) }), [], [{
      place: { line: 6, col: 20 },
      path: 'identities.c3.external_id',
      message: 'external id "e2" already names identity "c2" in org acme'
    }]],
    ['the same external id in another org', file({ c3: rec(2, { org: 'globex', external_id: 'e2' }) }), [], []],
    ['two of the file with one external id: the second refused', file({
      c3: rec(2, { org: 'acme', external_id: 'e9' }),
      c4: rec(5, { org: 'acme', external_id: 'e9' })
    }), [], [{
      place: { line: 5, col: 20 }, path: 'identities.c4.external_id', message: /already names identity "c3"/
    }]],
    ['external ids swapped within the file', file({
      c1: rec(2, { org: 'acme', external_id: 'e2' }),
      c2: rec(5, { org: 'acme', external_id: 'e1' })
    }), [], []],
    ['the holder pruned: its external id free', file({ c3: rec(2, { org: 'acme', external_id: 'e2' }) }),
      [pruned('c2')], []],
    ['the holder kept (not pruned)', file({ c3: rec(2, { org: 'acme', external_id: 'e2' }) }), [pruned('c1')], [{
      path: 'identities.c3.external_id'
    }]],
    ['a moved one is not also checked for its external id', file({
      c1: rec(2, { org: 'globex', external_id: 'e1' })
    }), [], [{ path: 'identities.c1.org' }]],
    ['no org or external id given: nothing to hold', file({ c3: rec(2, { external_id: 'e2' }) }), [], []]
  ]
  for (const [what, f, changes, expected] of rows) {
    const problems = identityProblems(f, REGISTRY, changes)
    t.match(problems, expected, what)
    t.equal(problems.length, expected.length, `${what}: ${expected.length} problem(s)`)
  }
})
