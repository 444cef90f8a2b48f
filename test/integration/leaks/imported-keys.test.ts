/**
 * Keys brought from another system (docs/imports.md), against real Redis, the real
 * gateway and the real executable:
 *
 * - a Kong-style random key imported as plaintext and an Unkey-style SHA-256, each
 *   working with its identity (X-Auth-Key-Id the new key id); revoke -> 401; rotate
 *   -> the native key works and the imported one is refused;
 * - after the import no Redis key or value holds the plaintext;
 * - a file with bad lines: every one named with its line, nothing written;
 * - keys.accept_imported off: a foreign token is 401 without any Redis command;
 *   on: each forged foreign token costs at most one Redis read, and the unknown-key
 *   budget refuses past its burst without Redis.
 */
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { eventually, startGateway } from '../../helpers/gateway.js'
import { dumpRedis } from '../../helpers/redis-dump.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')
const ON = 'keys: { accept_imported: true }\n'

function importFile (lines: unknown[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-import-'))
  const file = join(dir, 'keys.jsonl')
  writeFileSync(file, lines.map((l) => typeof l === 'string' ? l : JSON.stringify(l)).join('\n') + '\n')
  return file
}

t.test('a Kong key (plaintext) and an Unkey hash: identity, revoke, rotate, nothing stored in the clear', async (t) => {
  const gw = await startGateway(t, { yaml: ON })
  const env = cliEnv(gw)
  const kong = randomBytes(16).toString('hex') // Kong key-auth's generated keys: 32 hex characters
  const unkey = `uk_${randomBytes(16).toString('base64url').replace(/[-_]/g, 'x')}`
  const file = importFile([
    '# from Kong key-auth',
    { type: 'personal', user: 'alice', name: 'kong alice', key: kong },
    { type: 'bot', role: 'orgreader', org: 'globex', name: 'unkey ci', sha256: sha256(unkey), expires_at: '2099-01-01T00:00:00Z' }
  ])
  const run = await runCli(['keys', 'import', file, '--json'], env)
  t.equal(run.code, 0, run.stderr)
  const imported = JSON.parse(run.stdout) as Array<{ line: number, id: string, type: string, org: string }>
  t.same(imported.map((k) => [k.line, k.type, k.org]), [[2, 'personal', 'acme'], [3, 'bot', 'globex']])
  const [kongId, unkeyId] = imported.map((k) => k.id) as [string, string]
  t.match(kongId, /^[0-9A-Za-z]{16}$/, 'a keygate key id')
  t.not(kongId, kong.slice(0, 16), 'the id is not taken from the token')

  const asAlice = await gw.get('/api/v1/users', kong)
  t.equal(asAlice.status, 200, 'the Kong key works as it is')
  const h = gw.upstream.last()?.headers ?? {}
  t.equal(h['x-auth-key-id'], kongId)
  t.equal(h['x-auth-user-id'], 'alice')
  t.equal(h['x-auth-org-id'], 'acme')
  t.equal((await gw.get('/api/v1/orgs/acme/projects', kong)).status, 403, 'decided like a native key: the user\'s role grants no orgs:read')
  t.equal((await gw.get('/api/v1/orgs/globex/projects', unkey)).status, 200, 'the Unkey key works as it is')
  t.equal(gw.upstream.last()?.headers['x-auth-key-id'], unkeyId)
  t.equal((await gw.get('/api/v1/orgs/acme/projects', unkey)).status, 403, 'its org only')
  t.equal((await gw.get('/api/v1/users', kong + 'x')).status, 401, 'another token: 401')

  const dump = await dumpRedis(gw)
  t.notOk(dump.includes(kong), 'the plaintext is in no Redis key or value')
  t.ok(dump.includes(sha256(kong)), '(its SHA-256 is: the dump covers the records)')
  t.match(await gw.client.hgetall(gw.fixtures.keys.key(kongId)), { hash: sha256(kong), imported: 'key', type: 'personal', user: 'alice' })
  const shown = await runCli(['keys', 'show', kongId, '--json'], env)
  t.match(JSON.parse(shown.stdout), { id: kongId, imported: 'key', status: 'active', user: 'alice' }, 'keys show tells it was imported')
  t.notOk(shown.stdout.includes(sha256(kong)), 'never its hash')
  const audit = await gw.client.xrange(gw.fixtures.keys.audit, '-', '+')
  t.equal(audit.filter(([, f]) => f.includes('key.import')).length, 2, 'one key.import entry per key')
  t.notOk(gw.rawLogs.some((l) => l.includes(kong)), 'no log line holds the key')
  t.ok(gw.logs.some((l) => l.key_id === kongId), 'the log names the key id')

  const again = await runCli(['keys', 'import', file], env)
  t.equal(again.code, 1, 'importing the same keys again is refused')
  t.match(again.stderr, /line 2: key: already imported as key/)

  t.equal((await runCli(['keys', 'revoke', unkeyId], env)).code, 0)
  const revoked = await gw.get('/api/v1/orgs/globex/projects', unkey)
  t.equal(revoked.status, 401, 'revoked: 401 at once')
  t.equal((await gw.logOf(revoked))?.reason, 'key_revoked')

  const rotated = await runCli(['keys', 'rotate', kongId, '--grace', '1s', '--json'], env)
  t.equal(rotated.code, 0, rotated.stderr)
  const native = JSON.parse(rotated.stdout) as { id: string, key: string }
  t.match(native.key, /^kg_/, 'rotation issues a native key')
  t.equal((await gw.get('/api/v1/users', native.key)).status, 200, 'the native key works')
  t.equal(gw.upstream.last()?.headers['x-auth-user-id'], 'alice')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', kong)).status === 401, 3000) >= 0, 'the imported one is refused once its grace is over')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(kongId), 'replaced_by'), native.id)
})

t.test('a file with bad lines: each named with its line, nothing written', async (t) => {
  const gw = await startGateway(t, { yaml: ON })
  const env = cliEnv(gw)
  const before = await gw.client.dbsize()
  const good = randomBytes(16).toString('hex')
  const file = importFile([
    { type: 'personal', user: 'alice', key: good },
    'not json',
    { type: 'robot', user: 'alice', key: 'abc' },
    { type: 'bot', role: 'reader', org: 'acme', key: 'x', sha256: sha256('x') },
    { type: 'bot', role: 'nosuchrole', org: 'acme', sha256: 'ABC' },
    { type: 'personal', user: 'alice', key: good },
    { type: 'personal', user: 'alice', key: 'bad token with spaces' },
    { type: 'personal', user: 'ghost', sha256: sha256('ghost') }
  ])
  const run = await runCli(['keys', 'import', file, '--json'], env)
  t.equal(run.code, 1)
  const details = (JSON.parse(run.stderr) as { error: { details: Array<{ field: string }> } }).error.details.map((d) => d.field)
  t.same(details, ['line 2: line', 'line 3: type', 'line 4: key', 'line 5: sha256', 'line 7: key', 'line 6: key'], 'every bad line of the file, at once')
  t.equal(await gw.client.dbsize(), before, 'nothing written')
  const refs = await runCli(['keys', 'import', importFile([{ type: 'personal', user: 'alice', key: good }, { type: 'personal', user: 'ghost', sha256: sha256('ghost') }, { type: 'bot', role: 'nosuchrole', org: 'acme', sha256: sha256('r') }]), '--json'], env)
  t.equal(refs.code, 1)
  t.match(refs.stderr, /line 2: user/)
  t.match(refs.stderr, /line 3: role/)
  t.equal((await gw.get('/api/v1/users', good)).status, 401, 'the good line of a bad file was not imported')
})

t.test('keys.accept_imported off: a foreign token is 401 with no Redis command', async (t) => {
  const gw = await startGateway(t)
  const token = randomBytes(16).toString('hex')
  await gw.client.set(`${gw.prefix}imported:${sha256(token)}`, 'whatever')
  const { result, commands } = await watchGatewayRedis(gw, async () => await gw.get('/api/v1/users', token))
  t.equal(result.status, 401)
  t.equal((await gw.logOf(result))?.reason, 'malformed_credential')
  t.same(commands, [], 'no Redis command')
})

t.test('keys.accept_imported on: forged foreign tokens cost one Redis read each, within the unknown-key budget', async (t) => {
  const BURST = 1000
  const gw = await startGateway(t, { yaml: ON + `limits: { unknown_keys_per_peer: { per_second: 0.01, burst: ${BURST} } }\n` })
  const { result: statuses, commands } = await watchGatewayRedis(gw, async () => {
    const out: number[] = []
    for (let i = 0; i < BURST; i++) out.push((await gw.get('/api/v1/users', randomBytes(16).toString('hex'))).status)
    return out
  })
  t.same(new Set(statuses), new Set([401]), 'every forged token: 401')
  t.comment(`Redis commands for ${BURST} forged foreign tokens: ${commands.length} (${[...new Set(commands.map((c) => c.split(' ')[0]))].join(', ')})`)
  t.ok(commands.length <= BURST, `at most one Redis read per forged token (${commands.length})`)
  t.ok(commands.every((c) => /^eval/i.test(c)), 'each one EVALSHA')
  const { result: past, commands: none } = await watchGatewayRedis(gw, async () => await gw.get('/api/v1/users', randomBytes(16).toString('hex')))
  t.equal(past.status, 401)
  t.equal((await gw.logOf(past))?.reason, 'unknown_key_limited', 'past the budget: refused')
  t.same(none, [], 'without Redis')
  const long = await watchGatewayRedis(gw, async () => await gw.get('/api/v1/users', 'a'.repeat(600)))
  t.equal(long.result.status, 401, 'a token longer than 512: 401')
  t.same(long.commands, [], 'without Redis')
})
