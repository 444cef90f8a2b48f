/**
 * The real `keygate` executable's exit statuses and error output: `--version` prints
 * package.json's version; `check` exits 0 on allow and 3 on deny, 1 when Redis cannot
 * be reached, 2 on bad usage; with `--json` an error is a JSON object; a bare command
 * group prints its help and exits 2.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { refusedPort } from '../../helpers/upstream.js'

const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }

t.test('--version prints the version from package.json', async (t) => {
  for (const flag of ['--version', '-V']) {
    const run = await runCli([flag], {})
    t.equal(run.code, 0, flag)
    t.equal(run.stdout.trim(), version, `${flag} prints ${version}`)
  }
})

t.test('a bare command group prints its help and exits 2', async (t) => {
  for (const group of ['keys', 'users', 'roles', 'orgs', 'config']) {
    const run = await runCli([group], {})
    t.equal(run.code, 2, `keygate ${group}: exit 2`)
    t.match(run.stderr, new RegExp(`Usage: keygate ${group} \\[options\\] \\[command\\]`), `keygate ${group}: its help`)
  }
  const help = await runCli(['keys', '--help'], {})
  t.equal(help.code, 0, '--help asked for is not an error')
  t.match(help.stdout, /Usage: keygate keys/)
})

t.test('check: 0 allow, 3 deny, 1 Redis unreachable, 2 bad usage', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice')
  const env = cliEnv(gw)

  const allow = await runCli(['check', 'GET', '/api/v1/users'], { ...env, KEYGATE_KEY: alice.key })
  t.equal(allow.code, 0, `allow: exit 0 (${allow.stderr})`)
  t.match(allow.stdout, /^ALLOW/)

  const deny = await runCli(['check', 'POST', '/api/v1/users'], { ...env, KEYGATE_KEY: alice.key })
  t.equal(deny.code, 3, `deny (no permission): exit 3 (${deny.stderr})`)
  t.match(deny.stdout, /^DENY 403/)

  const unknown = await runCli(['check', 'GET', '/api/v1/users', '--json'], { ...env, KEYGATE_KEY: 'kg_not_a_key' })
  t.equal(unknown.code, 3, 'deny (bad key), --json: exit 3')
  t.equal((JSON.parse(unknown.stdout) as { allowed: boolean }).allowed, false)

  const down = await runCli(['check', 'GET', '/api/v1/users'], { ...env, KEYGATE_KEY: alice.key, KEYGATE_REDIS_URL: `redis://127.0.0.1:${await refusedPort()}` })
  t.equal(down.code, 1, 'Redis unreachable: exit 1, not a deny')
  t.match(down.stderr, /^error: cannot reach Redis/)

  const noKey = await runCli(['check', 'GET', '/api/v1/users'], env, '')
  t.equal(noKey.code, 2, 'no key: bad usage, exit 2')
})

t.test('--json: errors are JSON objects', async (t) => {
  const usage = await runCli(['keys', 'list', '--json', '--bogus'], {})
  t.equal(usage.code, 2)
  t.same(JSON.parse(usage.stderr), { error: { code: 'usage', message: "unknown option '--bogus'", exit_code: 2 } }, 'a usage error')

  const port = await refusedPort()
  const down = await runCli(['keys', 'list', '--json'], { KEYGATE_REDIS_URL: `redis://ops:s3cret@127.0.0.1:${port}` })
  t.equal(down.code, 1)
  t.same(JSON.parse(down.stderr), {
    error: { code: 'redis', message: `cannot reach Redis (standalone 127.0.0.1:${port} db 0; check KEYGATE_REDIS_URL or redis.url)`, exit_code: 1 }
  }, 'Redis unreachable: the Redis tried, without its credentials')
  t.equal(down.stdout, '', 'nothing on stdout')

  const config = await runCli(['keys', 'list', '--json'], { KEYGATE_CONFIG: '/nonexistent/keygate.yaml' })
  t.equal(config.code, 1)
  const err = (JSON.parse(config.stderr) as { error: { code: string, details: Array<{ reason: string }>, exit_code: number } }).error
  t.equal(err.code, 'config')
  t.equal(err.exit_code, 1)
  t.match(err.details, [{ reason: /cannot read the file/ }], 'a configuration error lists its problems as details')

  const plain = await runCli(['keys', 'list', '--bogus'], {})
  t.match(plain.stderr, /^error: unknown option '--bogus'/, 'without --json: text')
})
