/**
 * `keygate check`, the real executable, against a gateway on the same Redis: for each
 * row of a table of requests, check gives the reason the gateway logs, the same
 * allow or deny, the same status, and the identity headers the upstream receives.
 * The key comes from KEYGATE_KEY or stdin, never from argv, and is never echoed.
 *
 * Each check is its own `keygate` process; they only read, so they run side by side
 * first, and the gateway is then asked the same requests one at a time (the upstream's
 * last request is compared).
 */
import t from 'tap'
import { cliEnv, pooled, runCli, type CliRun } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'

t.test('keygate check agrees with what the gateway does', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const alice = await gw.fixtures.personalKey('alice')
  const carol = await gw.fixtures.personalKey('carol')
  const bot = await gw.fixtures.botKey('writer', 'acme')
  const revoked = await gw.fixtures.personalKey('bob')
  await gw.client.hset(gw.fixtures.keys.key(revoked.id), 'status', 'revoked')
  const table: Array<[string, string, string, string]> = [
    ['GET', '/api/v1/users', alice.key, 'allowed'],
    ['POST', '/api/v1/users', alice.key, 'missing_permission'],
    ['POST', '/api/v1/users', bot.key, 'allowed'],
    ['GET', '/api/v1/orgs/globex/x', carol.key, 'allowed'],
    ['GET', '/api/v1/orgs/acme/x', carol.key, 'org_mismatch'],
    ['GET', '/api/v1/nothing', alice.key, 'no_rule'],
    ['GET', '/api/v1/users', revoked.key, 'key_revoked'],
    ['GET', '/api/v1/users', alice.key.slice(0, -1) + (alice.key.endsWith('a') ? 'b' : 'a'), 'bad_checksum'],
    ['GET', '/elsewhere', alice.key, 'no_route'],
    ['GET', '/api/v1/../x', alice.key, 'bad_path']
  ]
  const checks: CliRun[] = await pooled(table.map(([method, path, key]) => async () =>
    await runCli(['check', method, path, '--json'], { ...env, KEYGATE_KEY: key })), 2)
  for (const [i, [method, path, key, reason]] of table.entries()) {
    t.test(`${method} ${path} -> ${reason}`, async (t) => {
      const r = checks[i] as CliRun
      t.equal(r.code, reason === 'allowed' ? 0 : 3, `exit 0 on allow, 3 on deny ${r.stderr}`)
      const e = JSON.parse(r.stdout) as { allowed: boolean, status: number | string, reason: string, headers?: Record<string, string> }
      t.equal(e.reason, reason)
      const res = await gw.send(method, path, { Authorization: `Bearer ${key}` })
      t.equal(e.allowed, res.status === 200, 'check and the gateway agree on allow/deny')
      if (!e.allowed) t.equal(e.status, res.status, 'and on the status')
      const logged = await gw.logOf(res)
      t.equal(logged?.reason, reason, 'and on the reason the gateway logged')
      if (e.allowed && e.headers !== undefined) {
        const seen = gw.upstream.last()?.headers
        for (const [name, value] of Object.entries(e.headers)) {
          if (name !== 'x-request-id') t.equal(seen?.[name], value, `upstream header ${name}`)
        }
      }
    })
  }
  t.test('the key comes from stdin when KEYGATE_KEY is unset, never from argv', async (t) => {
    const r = await runCli(['check', 'GET', '/api/v1/users', '--json'], env, alice.key + '\n')
    t.equal(JSON.parse(r.stdout).reason, 'allowed')
    const none = await runCli(['check', 'GET', '/api/v1/users'], env, '')
    t.equal(none.code, 2)
    t.match(none.stderr, /KEYGATE_KEY/)
    const human = await runCli(['check', 'GET', '/api/v1/users'], { ...env, KEYGATE_KEY: alice.key })
    t.match(human.stdout, /^ALLOW/)
    t.notOk(human.stdout.includes(alice.key), 'the key is not echoed')
  })
})
