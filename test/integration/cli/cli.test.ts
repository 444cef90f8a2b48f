/**
 * The real `keygate` executable (dist/, built by `npm test` before tap runs)
 * against a real redis-server: exit codes 0 / 1 / 2, --json output, nothing written
 * on a failed or bad command, and a key created by the CLI working through the gateway.
 * `config check` touches no Redis, so it runs beside the registry commands.
 */
import t from 'tap'
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { refusedPort } from '../../helpers/upstream.js'

const run = runCli
t.jobs = 2

t.test('registry commands', { buffered: true }, async (t) => {
  const gw = await startGateway(t, { seed: false })
  const dir = mkdtempSync(join(tmpdir(), 'keygate-cli-'))
  const configFile = join(dir, 'keygate.yaml')
  writeFileSync(configFile, `redis: { prefix: "${gw.prefix}" }\nupstreams: { core: { url: "http://127.0.0.1:1" } }\nroutes: [{ prefix: /api/v1, upstream: core }]\n`)
  const env = { KEYGATE_CONFIG: configFile, KEYGATE_REDIS_URL: gw.redis.url }
  const redis: Redis = gw.client
  // records and index sets; the audit trail (its stream of changes, and its refusal counts: refusals are audited),
  // the gateway's usage hash and its per-key request log (written every second after a request through it,
  // whenever that falls) are not 'changes'
  const background = [`${gw.prefix}audit`, `${gw.prefix}usage`, `${gw.prefix}requests:`]
  const count = async (): Promise<number> =>
    (await redis.keys(`${gw.prefix}*`)).filter((k) => !background.some((b) => k.startsWith(b))).length

  t.test('roles put and users put', async (t) => {
    const role = await run(['roles', 'put', 'reader', '--permissions', 'users:read orgs:read', '--json'], env)
    t.equal(role.code, 0, role.stderr)
    t.same(JSON.parse(role.stdout).permissions, ['users:read', 'orgs:read'])
    t.equal(await redis.hget(`${gw.prefix}role:reader`, 'permissions'), 'users:read orgs:read')

    const first = await run(['users', 'put', 'alice', '--org', 'acme', '--role', 'reader', '--json'], env)
    t.equal(first.code, 0, first.stderr)
    t.equal(JSON.parse(first.stdout).created, true)
    t.same(await redis.hgetall(`${gw.prefix}user:alice`), { org: 'acme', role: 'reader', status: 'active' })
    await redis.hset(`${gw.prefix}user:alice`, 'status', 'deactivated')
    const again = await run(['users', 'put', 'alice', '--org', 'acme', '--role', 'reader', '--json'], env)
    t.equal(JSON.parse(again.stdout).created, false)
    t.equal(await redis.hget(`${gw.prefix}user:alice`, 'status'), 'deactivated', 'put does not reactivate')
    await redis.hset(`${gw.prefix}user:alice`, 'status', 'active')
  })

  t.test('keys create: shown once, stored as a hash, works through the gateway', async (t) => {
    const personal = await run(['keys', 'create', '--type', 'personal', '--user', 'alice', '--name', 'laptop', '--json'], env)
    t.equal(personal.code, 0, personal.stderr)
    const created = JSON.parse(personal.stdout) as { id: string, key: string, type: string }
    t.equal(created.type, 'personal')
    t.match(created.key, /^kg_/)
    const record = await redis.hgetall(`${gw.prefix}key:${created.id}`)
    t.equal(record.type, 'personal')
    t.equal(record.user, 'alice')
    t.equal(record.org, 'acme')
    t.equal(record.status, 'active')
    const secret = created.key.slice(3 + 16 + 1, -6)
    t.equal(record.hash, createHash('sha256').update(secret).digest('hex'))
    const everything = JSON.stringify(await Promise.all((await redis.keys(`${gw.prefix}*`)).map(async (k) => {
      const type = await redis.type(k)
      return type === 'hash' ? await redis.hgetall(k) : type === 'set' ? await redis.smembers(k) : type === 'stream' ? await redis.xrange(k, '-', '+') : null
    })))
    t.notOk(everything.includes(secret), 'the secret is stored nowhere in Redis')
    t.ok(await redis.sismember(`${gw.prefix}user-keys:alice`, created.id), 'indexed by user')
    t.ok(await redis.sismember(`${gw.prefix}org-keys:acme`, created.id), 'indexed by org')

    const res = await gw.get('/api/v1/users', created.key)
    t.equal(res.status, 200)

    const human = await run(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--expires-in', '90d'], env)
    t.equal(human.code, 0, human.stderr)
    t.match(human.stdout, /kg_[0-9A-Za-z]{16}_/)
    t.match(human.stdout, /shown only this once/)
    t.match(human.stdout, /expires at 20\d\d-/)
  })

  const failures: Array<[string, string[], number, RegExp]> = [
    ['unknown user', ['keys', 'create', '--type', 'personal', '--user', 'nobody'], 1, /user "nobody" does not exist/],
    ['unknown role', ['keys', 'create', '--type', 'bot', '--role', 'ghost', '--org', 'acme'], 1, /role "ghost" does not exist/],
    ['BOT key without org', ['keys', 'create', '--type', 'bot', '--role', 'reader'], 2, /--role <role> and --org <org>/],
    ['personal key with --role', ['keys', 'create', '--type', 'personal', '--user', 'alice', '--role', 'reader'], 2, /personal key takes --user/],
    ['bad type', ['keys', 'create', '--type', 'robot', '--role', 'reader', '--org', 'acme'], 2, /robot/],
    ['missing type', ['keys', 'create', '--user', 'alice'], 2, /--type/],
    ['malformed duration', ['keys', 'create', '--type', 'personal', '--user', 'alice', '--expires-in', '90 days'], 2, /duration/],
    ['missing permissions', ['roles', 'put', 'x'], 2, /--permissions/],
    ['bad permission', ['roles', 'put', 'x', '--permissions', 'not a:perm!'], 1, /invalid permission/],
    ['bad user id', ['users', 'put', 'a b', '--org', 'acme', '--role', 'reader'], 1, /invalid user id/],
    ['unknown command', ['frobnicate'], 2, /unknown command/]
  ]
  for (const [why, args, code, message] of failures) {
    t.test(`${why}: exit ${code}, a message, nothing written`, async (t) => {
      const before = await count()
      const r = await run(args, env)
      t.equal(r.code, code)
      t.match(r.stderr, message)
      t.equal(await count(), before)
    })
  }

  t.test('Redis unreachable: exit 1 with a clear message', async (t) => {
    const r = await run(['roles', 'put', 'x', '--permissions', 'a:b'], { ...env, KEYGATE_REDIS_URL: `redis://127.0.0.1:${await refusedPort()}` })
    t.equal(r.code, 1)
    t.match(r.stderr, /cannot reach Redis/)
  })
})

t.test('config check', { buffered: true }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-cli-'))
  const good = join(dir, 'good.yaml')
  const bad = join(dir, 'bad.yaml')
  writeFileSync(good, 'upstreams: { core: { url: "http://127.0.0.1:3000" } }\nroutes: [{ prefix: /api/v1, upstream: core }]\n')
  writeFileSync(bad, 'upstreams: { core: { url: "ftp://x" } }\nroutes: [{ prefix: /api/v1, upstream: nope }]\nbogus: 1\n')
  const ok = await run(['config', 'check', good], {})
  t.equal(ok.code, 0)
  t.match(ok.stdout, /OK/)
  const json = await run(['config', 'check', good, '--json'], {})
  t.equal(JSON.parse(json.stdout).ok, true)
  const no = await run(['config', 'check', bad], {})
  t.equal(no.code, 1)
  t.match(no.stderr, /upstreams\.core\.url/)
  t.match(no.stderr, /bogus: unknown field/)
  const viaEnv = await run(['config', 'check'], { KEYGATE_CONFIG: bad })
  t.equal(viaEnv.code, 1, 'KEYGATE_CONFIG names the file by default')
  const shipped = await run(['config', 'check', fileURLToPath(new URL('../../../config/keygate.yaml', import.meta.url))], {})
  t.equal(shipped.code, 0, 'the shipped default config is valid')
})
