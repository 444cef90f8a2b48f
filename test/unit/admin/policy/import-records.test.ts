// The lines of an import file, each checked in itself: every problem named with its
// line, the plaintext kept only as its SHA-256.
import t from 'tap'
import { createHash } from 'node:crypto'
import type { AdminError } from '../../../../src/admin/model/errors.js'
import {
  importRefused,
  lineProblem,
  parseImportLines,
  parseImportRecords
} from '../../../../src/admin/policy/import-records.js'

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')
const notNative = (): boolean => false

t.test('good lines: the plaintext becomes its SHA-256', async (t) => {
  const { inputs, problems } = parseImportLines([
    '# comment',
    JSON.stringify({ type: 'personal', user: 'alice', name: 'a', key: 'abc123' }),
    '',
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme', sha256: sha256('x'), expires_at: '2030-01-01T00:00:00Z' })
  ].join('\n'), notNative)
  t.same(problems, [])
  t.same(inputs.map((i) => [i.line, i.type, i.sha256, i.from, i.expiresAt]), [
    [2, 'personal', sha256('abc123'), 'key', undefined],
    [4, 'bot', sha256('x'), 'sha256', '2030-01-01T00:00:00Z']
  ])
  t.notOk(JSON.stringify(inputs).includes('abc123'), 'the plaintext is not kept')
})

t.test('every bad line, with its line number', async (t) => {
  const { inputs, problems } = parseImportLines([
    '{',
    JSON.stringify({ type: 'personal', user: 'alice', key: 'k1', extra: 1 }),
    JSON.stringify({ type: 'personal', user: 'alice', role: 'r', key: 'k2' }),
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme' }),
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme', sha256: 'A'.repeat(64) }),
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme', key: 'x'.repeat(513) }),
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme', key: 'kg_native' }),
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme', key: 'k8', expires_at: 'tomorrow' }),
    JSON.stringify({ type: 'bot', role: 'ci', org: 'acme', key: 'dup' }),
    JSON.stringify({ type: 'personal', user: 'bob', sha256: sha256('dup') })
  ].join('\n'), (token) => token.startsWith('kg_'))
  t.same(problems.map((p) => p.field), [
    'line 1: line', 'line 2: extra', 'line 3: type', 'line 4: key', 'line 5: sha256',
    'line 6: key', 'line 7: key', 'line 8: expires_at', 'line 10: key'
  ])
  t.ok(problems.every((p) => p.reason.startsWith(p.field + ': ')), 'each reason names its line too')
  t.same(inputs.map((i) => i.line), [9, 10])
})

t.test('the admin API\'s records: checked as the lines are, each problem named by its index', async (t) => {
  const { inputs, problems } = parseImportRecords([
    { type: 'personal', user: 'alice', key: 'k0' },
    'not an object',
    { type: 'bot', role: 'ci', org: 'acme', sha256: 'nothex' },
    { type: 'bot', role: 'ci', org: 'acme', key: 'k3', user: 7 },
    { type: 'personal', user: 'bob', key: 'k0' }
  ], notNative)
  t.same(problems.map((p) => p.field), ['record 1: record', 'record 2: sha256', 'record 3: user', 'record 4: key'])
  t.match(problems[3]?.reason, /the same key as record 0/)
  t.same(inputs.map((i) => [i.line, i.place]), [[0, 'record 0'], [4, 'record 4']])
  t.notOk(JSON.stringify(inputs).includes('"k0"'), 'the plaintext is not kept')
})

t.test('a problem names its record in its field and its reason; the refusal lists them all, nothing imported', async (t) => {
  t.same(lineProblem('line 3', 'key', 'not a token'), { field: 'line 3: key', reason: 'line 3: key: not a token' })
  const problems = [
    lineProblem('record 0', 'type', 'must be personal or bot'),
    lineProblem('record 2', 'key', 'the same key as record 0')
  ]
  const rows: Array<[string, AdminError, { kind: string, needs?: string, notes: unknown[] }]> = [
    ['invalid', importRefused(problems), { kind: 'invalid', notes: [{ result: 'error' }] }],
    [
      'forbidden',
      importRefused(problems, 'forbidden', 'keygate:admin', []),
      { kind: 'forbidden', needs: 'keygate:admin', notes: [] }
    ]
  ]
  for (const [what, err, expected] of rows) {
    t.equal(err.message, 'the import has 2 problem(s); nothing was imported', what)
    t.same(err.details, problems, `${what}: every problem`)
    t.equal(err.kind, expected.kind)
    t.equal(err.needs, expected.needs)
    t.same(err.notes, expected.notes, `${what}: how it is audited`)
  }
})
