/**
 * `registry apply` racing a CLI edit of the same role, against real Redis: an edit that
 * lands between the apply's read and its EXEC aborts the EXEC, and the apply, made
 * again, lands after it whole; an edit after the apply wins; run side by side, the role
 * is always one whole state or the other, and the rest of the file always applied.
 */
import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { fullAdmin } from '../../helpers/fixtures.js'
import { startGateway } from '../../helpers/gateway.js'
import { parseRegistryFile } from '../../../src/admin/as-code/registry-file.js'
import { createRedis } from '../../../src/registry/redis-client.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'

const dir = mkdtempSync(join(tmpdir(), 'keygate-registry-'))
let files = 0
function file (text: string): string {
  const path = join(dir, `registry-${files++}.yaml`)
  writeFileSync(path, text)
  return path
}

t.test('apply racing a CLI edit of the same role: the later wins, nothing half written', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const redis = createRedis(gw.config.redis, { queueWhileConnecting: true })
  t.teardown(() => { redis.disconnect() })
  const admin = fullAdmin(redis, redisKeys(gw.prefix), gw.config.keys.prefix, 'cli:test')
  const registry = parseRegistryFile('roles:\n  reader: { permissions: [users:read, orgs:read], description: from the file }\nusers:\n  alice: { org: acme, role: reader, name: Alice }\n')
  const role = async (): Promise<Record<string, string>> => await gw.client.hgetall(gw.fixtures.keys.role('reader'))

  // the CLI's edit lands between the apply's read and its EXEC: the EXEC aborts, the
  // apply reads again and lands after the edit, whole
  const attempts: number[] = []
  const result = await admin.applyRegistry(registry, {
    prune: false,
    beforeCommit: async (attempt) => {
      attempts.push(attempt)
      if (attempt === 1) {
        const edit = await runCli(['roles', 'put', 'reader', '--permissions', 'users:write', '--description', 'from the CLI'], env)
        t.equal(edit.code, 0, edit.stderr)
      }
    }
  })
  t.same(attempts, [1, 2], 'the first EXEC was aborted by the edit, the second landed')
  t.ok(result.ok)
  t.same(await role(), { permissions: 'users:read orgs:read', description: 'from the file' }, 'the apply came later: the file wins')
  t.equal(await gw.client.hget(gw.fixtures.keys.user('alice'), 'name'), 'Alice', 'and the rest of the file with it')

  // the CLI edit after the apply wins
  const edit = await runCli(['roles', 'put', 'reader', '--permissions', 'users:write', '--description', 'from the CLI'], env)
  t.equal(edit.code, 0)
  t.same(await role(), { permissions: 'users:write', description: 'from the CLI' }, 'the edit came later: the edit wins')

  // both at once, several times: always one whole state or the other
  for (let i = 0; i < 2; i++) {
    const path = file(`roles:\n  reader: { permissions: [users:read, orgs:read], description: from the file }\nusers:\n  alice: { org: acme, role: reader, name: Alice ${i} }\n`)
    const [applied, edited] = await Promise.all([
      runCli(['registry', 'apply', path], env),
      runCli(['roles', 'put', 'reader', '--permissions', 'users:delete', '--description', `edit ${i}`], env)
    ])
    t.equal(applied.code, 0, applied.stderr)
    t.equal(edited.code, 0, edited.stderr)
    const now = await role()
    t.ok((now.permissions === 'users:read orgs:read' && now.description === 'from the file') || (now.permissions === 'users:delete' && now.description === `edit ${i}`), `round ${i}: one whole state (${JSON.stringify(now)})`)
    t.equal(await gw.client.hget(gw.fixtures.keys.user('alice'), 'name'), `Alice ${i}`, `round ${i}: the apply landed whole`)
  }
})
