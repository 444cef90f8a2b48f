// A key import, decided over a snapshot: pass 1 (who may, references), pass 2 (the registry), all or none.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import type { ImportInput } from '../../../../src/admin/policy/import-records.js'
import { decideImport, keyToImport } from '../../../../src/admin/policy/imports.js'
import { PERSONAL_KEY_REFUSAL } from '../../../../src/admin/policy/scope-rules.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const DAY = 86_400_000
const NOW = Date.parse('2027-01-01T00:00:00Z')
const o = { selfServiceMaxTtlMs: 90 * DAY, actor: 'key:OlgaKey', now: NOW }
const SHA = (n: number): string => String(n).repeat(64).slice(0, 64)
const rec = (
  n: number,
  r: Partial<ImportInput>
): ImportInput => ({ line: n, place: `record ${n}`, type: 'bot', sha256: SHA(n), from: 'sha256', ...r })
const snap = world({ imported: { [SHA(9)]: 'OldImportedKey01' } })

t.test('keyToImport: an admin imports a key as it is; anyone else exactly what creating it would allow', async (t) => {
  const rows: Array<[string, AdminScope, ImportInput, unknown]> = [
    [
      'admin: as it is',
      ADMIN,
      rec(0, { role: 'boss', org: 'globex' }),
      allowed({ role: 'boss', org: 'globex', createdBy: undefined, expiresWithinMs: undefined })
    ],
    [
      'org: a BOT key of its org, capped, its creator recorded',
      ORG,
      rec(0, { role: 'reader' }),
      allowed({ org: 'acme', createdBy: 'user:olga', expiresWithinMs: 90 * DAY })
    ],
    [
      'org: its expires_at taken as expires_in',
      ORG,
      rec(0, { role: 'reader', expiresAt: '2027-06-01T00:00:00Z' }),
      refused({ kind: 'invalid', details: [{ field: 'expires_in' }] })
    ],
    [
      'org: an expires_at past, as zero',
      ORG,
      rec(0, { role: 'reader', expiresAt: '2026-06-01T00:00:00Z' }),
      allowed({ expiresAt: '2026-06-01T00:00:00Z' })
    ],
    [
      'org: another user\'s personal key',
      ORG,
      rec(0, { type: 'personal', user: 'alice' }),
      refused({ kind: 'forbidden', message: PERSONAL_KEY_REFUSAL, audit: 'denied' })
    ],
    ['self: its own personal key', SELF, rec(0, { type: 'personal' }), allowed({ user: 'sam', createdBy: 'user:sam' })]
  ]
  for (const [what, s, input, expected] of rows) judge(t, verdict(() => keyToImport(s, snap, input, o)), expected, what)
})

t.test('decideImport: every record good, or nothing, every problem named with its record', async (t) => {
  const rows: Array<[string, AdminScope, ImportInput[], unknown]> = [
    ['good records', ADMIN, [rec(0, { role: 'reader', org: 'acme', name: 'ci' }), rec(1, { type: 'personal', user: 'alice', from: 'key', expiresAt: '2027-02-01T00:00:00Z' })], allowed({
      records: [
        {
          org: 'acme',
          record: {
            type: 'bot',
            imported: 'sha256',
            org: 'acme',
            name: 'ci',
            status: 'active',
            created_at: '2027-01-01T00:00:00Z',
            created_by: 'key:OlgaKey',
            role: 'reader'
          }
        },
        {
          org: 'acme',
          record: { type: 'personal', imported: 'key', user: 'alice', expires_at: '2027-02-01T00:00:00Z' }
        }
      ],
      warnings: []
    })],
    [
      'an org with no record warns, with the record\'s place',
      ADMIN,
      [rec(3, { role: 'reader', org: 'newco' })],
      allowed({ warnings: [{ field: 'record 3: org', reason: /^record 3: org: org "newco" has no record/ }] })
    ],
    [
      'a personal key stating its user\'s org',
      ADMIN,
      [rec(4, { type: 'personal', user: 'alice', statedOrg: 'acme' })],
      allowed({ records: [{ org: 'acme', record: { type: 'personal', user: 'alice', org: 'acme' } }] })
    ],
    [
      'a personal key stating another org',
      ADMIN,
      [rec(4, { type: 'personal', user: 'alice', statedOrg: 'globex' })],
      refused({
        kind: 'invalid',
        details: [{ field: 'record 4: org', reason: 'record 4: org: user "alice" is not in org "globex"' }]
      })
    ],
    [
      'a self principal',
      SELF,
      [rec(0, { type: 'personal' })],
      refused({ kind: 'forbidden', message: 'importing keys needs keygate:org:admin', audit: 'denied' })
    ],
    ['pass 1: a missing role, a deactivated user; counted as one refused import', ADMIN, [rec(0, { role: 'ghost', org: 'acme' }), rec(1, { type: 'personal', user: 'dee' }), rec(2, { sha256: SHA(9), role: 'reader', org: 'acme' })], refused({
      kind: 'invalid',
      message: 'the import has 2 problem(s); nothing was imported',
      details: [
        { field: 'record 0: role', reason: 'record 0: role: role "ghost" does not exist' },
        { field: 'record 1: user', reason: 'record 1: user: user "dee" is deactivated' }
      ],
      audit: [{ result: 'error', why: '2 problem(s)' }]
    })],
    ['pass 1: a record the scope refuses makes it a 403, each refused record counted as the key creation it would be', ORG, [rec(0, { role: 'boss' }), rec(1, { role: 'reader' }), rec(2, { type: 'personal', user: 'alice' })], refused({
      kind: 'forbidden',
      needs: 'keygate:admin',
      details: [
        { field: 'record 0: record', reason: /role "boss" is not within/ },
        { field: 'record 2: user', reason: `record 2: user: ${PERSONAL_KEY_REFUSAL}` }
      ],
      audit: [
        { result: 'denied', why: /role "boss"/, action: 'key.create', target: 'role:boss' },
        { result: 'denied', why: PERSONAL_KEY_REFUSAL, action: 'key.create', target: 'user:alice' }
      ]
    })],
    ['pass 1: a user outside the org, as if missing: counted, and the import refused as invalid', ORG, [rec(0, { type: 'personal', user: 'gina' })], refused({
      kind: 'invalid',
      details: [{ field: 'record 0: user', reason: 'record 0: user: user "gina" does not exist' }],
      audit: [
        { result: 'denied', why: 'user "gina" is not in org acme', action: 'key.create', target: 'user:gina' },
        { result: 'error', why: '1 problem(s)' }
      ]
    })],
    ['pass 2: imported already; an owner incomplete; beyond the org\'s key policy', ADMIN, [
      rec(0, { sha256: SHA(9), role: 'reader', org: 'acme' }), rec(1, { type: 'personal', user: 'half' }), rec(
        2,
        { role: 'reader', org: 'capped', expiresAt: '2027-03-01T00:00:00Z' }
      )
    ], refused({
      kind: 'invalid',
      details: [
        { field: 'record 0: key', reason: 'record 0: key: already imported as key OldImportedKey01' },
        { field: 'record 1: user', reason: 'record 1: user: user "half" has an incomplete record' },
        {
          field: 'record 2: expires_at',
          reason: 'record 2: expires_at: org "capped" lets its keys live 30d at most (key_max_ttl)'
        }
      ],
      audit: 'error'
    })],
    [
      'pass 2: a malformed key policy refuses the import as a conflict',
      ADMIN,
      [rec(0, { role: 'reader', org: 'broken' })],
      refused({ kind: 'conflict', message: /malformed key_max_ttl/ })
    ],
    [
      'no expiry asked: the org\'s cap',
      ADMIN,
      [rec(0, { role: 'reader', org: 'capped' })],
      allowed({ records: [{ record: { expires_at: '2027-01-31T00:00:00Z' } }] })
    ],
    [
      'an org admin\'s record: the self-service cap',
      ORG,
      [rec(0, { role: 'reader' })],
      allowed({ records: [{ org: 'acme', record: { expires_at: '2027-04-01T00:00:00Z', created_by: 'user:olga' } }] })
    ]
  ]
  for (const [what, s, inputs, expected] of rows) {
    judge(
      t,
      verdict(() => decideImport(s, snap, inputs, o)),
      expected,
      what
    )
  }
  // a token imported already, as another org's key or as the caller's org's
  const both = world({
    imported: { [SHA(9)]: 'GlobexImported01', [SHA(8)]: 'AcmeImported0001' },
    keys: { GlobexImported01: { type: 'bot', org: 'globex', role: 'reader' }, AcmeImported0001: { type: 'bot', org: 'acme', role: 'reader' } }
  })
  const reasons = (s: AdminScope, inputs: ImportInput[]): string[] => {
    try {
      decideImport(s, both, inputs, o)
    } catch (err: unknown) {
      return ((err as { details?: Array<{ reason: string }> }).details ?? []).map((d) => d.reason)
    }
    return []
  }
  t.same(reasons(ORG, [rec(9, { role: 'reader' }), rec(8, { role: 'reader' })]), [
    'record 9: key: already imported',
    'record 8: key: already imported as key AcmeImported0001'
  ], 'an org admin is told the id of its own org\'s key only, never another org\'s')
  t.same(reasons(ADMIN, [rec(9, { role: 'reader', org: 'acme' })]), [
    'record 9: key: already imported as key GlobexImported01'
  ], 'an admin is told any key\'s id')
  const good = verdict(() => decideImport(ADMIN, snap, [rec(0, { role: 'reader', org: 'acme' })], o))
  t.notOk(
    good.ok && 'hash' in (good.value.records[0]?.record ?? {}),
    'no hash in the record: the action writes the token\'s SHA-256'
  )
})
