/**
 * Security review, finding 8: an import line for a personal key that named `org` was
 * refused ("takes its org and role from its user"), though the contract lists `org`
 * among an import record's fields. It is accepted when it is the user's org (a check
 * the exporting system can make), and refused, nothing imported, when it is not.
 */
import t from 'tap'
import { readImportLines } from '../../src/admin/actions/index.js'
import { AdminError } from '../../src/admin/model/errors.js'
import { startGateway } from '../helpers/gateway.js'

t.test('a personal key\'s import line naming org', async (t) => {
  const gw = await startGateway(t)
  const admin = gw.fixtures.admin
  const read = (lines: object[]): ReturnType<typeof readImportLines> =>
    readImportLines(lines.map((l) => JSON.stringify(l)).join('\n'), 'kg_')

  const same = read([{ type: 'personal', user: 'alice', org: 'acme', key: 'legacy-alice-0123456789' }])
  t.same(same.problems, [], 'the user\'s own org: no problem with the line')
  const { result } = await admin.importKeys(same.inputs)
  t.equal(result.length, 1)
  t.equal(await gw.client.hget(gw.fixtures.keys.key(result[0]?.id as string), 'org'), 'acme')

  const other = read([
    { type: 'personal', user: 'alice', org: 'globex', key: 'legacy-alice-9876543210' },
    { type: 'bot', role: 'reader', org: 'acme', key: 'legacy-bot-0123456789' }
  ])
  t.same(other.problems, [], 'the line itself is well formed')
  const refused = await admin.importKeys(other.inputs).catch((err: unknown) => err)
  t.ok(refused instanceof AdminError, 'another org: refused')
  t.match((refused as AdminError).details, [{ field: 'line 1: org', reason: /not in org "globex"/ }])
  t.equal((refused as AdminError).details?.length, 1, 'that line alone')
  t.equal((await admin.listKeys({ org: 'acme' })).filter((k) => k.role === 'reader' && k.imported !== undefined).length,
    0, 'nothing imported')

  const role = read([{ type: 'personal', user: 'alice', role: 'reader', key: 'legacy-alice-role-0123456789' }])
  t.match(role.problems, [{ reason: /takes its org and role from its user/ }], 'a role is still refused')
})
