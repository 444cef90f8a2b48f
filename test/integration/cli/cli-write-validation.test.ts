/**
 * Registry writes through the real `keygate` executable are checked before anything
 * is written, by the same checks as the admin API: an unknown role, user or creator,
 * or a permission outside the grammar of rules, exits 1 with each problem on stderr
 * (with `--json`: the error as JSON on stderr, stdout empty); an org with no record
 * is accepted with a `warning:` line on stderr. Real Redis.
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'

t.test('the CLI checks registry writes', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  await gw.fixtures.admin.putOrg('acme', { name: 'Acme' })
  // records and index sets only (the audit trail counts refusals)
  const count = async (): Promise<number> => (await gw.client.keys(`${gw.prefix}*`)).filter((k) => !k.startsWith(`${gw.prefix}audit`) && !k.startsWith(`${gw.prefix}usage`)).length

  // [what, the command, each problem's stderr line, whether to run it with --json too (each run is a process)]
  const refused: Array<[string, string[], RegExp[], boolean?]> = [
    ['users put with an unknown role', ['users', 'put', 'zed', '--org', 'acme', '--role', 'nosuchrole'], [/^error: role "nosuchrole" does not exist$/m], true],
    ['a personal key of an unknown user', ['keys', 'create', '--type', 'personal', '--user', 'nobody'], [/^error: user "nobody" does not exist$/m]],
    ['a BOT key with an unknown role', ['keys', 'create', '--type', 'bot', '--role', 'nosuchrole', '--org', 'acme'], [/^error: role "nosuchrole" does not exist$/m]],
    ['a BOT key with an unknown creator', ['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--created-by', 'nobody'], [/^error: user "nobody" does not exist$/m]],
    ['every problem at once', ['keys', 'create', '--type', 'bot', '--role', 'ghost', '--org', 'acme', '--created-by', 'nobody'], [/^error: role "ghost" does not exist$/m, /^error: user "nobody" does not exist$/m], true],
    ['a permission without an action', ['roles', 'put', 'odd', '--permissions', 'users:read foo'], [/^error: invalid permission "foo" \(expected resource:action/m], true],
    ['a bad user id and an unknown role', ['users', 'put', 'a b', '--org', 'acme', '--role', 'nosuchrole'], [/^error: invalid user id "a b"/m, /^error: role "nosuchrole" does not exist$/m]],
    ['a permission in capitals', ['roles', 'put', 'odd', '--permissions', 'USERS:READ'], [/^error: invalid permission "USERS:READ"/m]]
  ]
  for (const [label, args, messages, json] of refused) {
    t.test(`${label}: exit 1, each problem on stderr, nothing written`, async (t) => {
      const before = await count()
      const r = await runCli(args, env)
      t.equal(r.code, 1, r.stderr)
      for (const m of messages) t.match(r.stderr, m)
      t.equal(r.stdout, '')
      t.equal(await count(), before, 'nothing written')
      if (json !== true) return

      const asJson = await runCli([...args, '--json'], env)
      t.equal(asJson.code, 1, '--json: exit 1 too')
      t.equal(asJson.stdout, '', '--json: nothing on stdout')
      const error = (JSON.parse(asJson.stderr) as { error: { code: string, message: string, details: Array<{ field: string, reason: string }> } }).error
      t.match(error.code, /^(not_found|bad_request)$/)
      t.equal((error as unknown as { exit_code: number }).exit_code, 1, 'the exit status in the object too')
      t.equal(error.details.length, messages.length, 'one detail per problem')
      for (const [i, m] of messages.entries()) t.match(`error: ${error.details[i]?.reason ?? ''}`, m)
      t.equal(await count(), before)
    })
  }

  t.test('a deactivated user: exit 1, the reason on stderr', async (t) => {
    await gw.fixtures.user('dave', 'acme', 'reader')
    t.equal((await runCli(['users', 'deactivate', 'dave'], env)).code, 0)
    const r = await runCli(['keys', 'create', '--type', 'personal', '--user', 'dave', '--json'], env)
    t.equal(r.code, 1)
    t.same(JSON.parse(r.stderr), { error: { code: 'conflict', message: 'user "dave" is deactivated', details: [{ field: 'user', reason: 'user "dave" is deactivated' }], exit_code: 1 } })
  })

  t.test('an org with no record: accepted, exit 0, a warning on stderr', async (t) => {
    const user = await runCli(['users', 'put', 'nora', '--org', 'newco', '--role', 'reader', '--json'], env)
    t.equal(user.code, 0, user.stderr)
    t.equal(JSON.parse(user.stdout).created, true, 'stdout is the result, as always')
    t.match(user.stderr, /^warning: org "newco" has no record: it has no name and no org rate limit until one is put \(`keygate orgs put newco --name <text>` puts one and silences this\)$/m,
      'the warning names the command that silences it')
    t.equal(await gw.client.hget(`${gw.prefix}user:nora`, 'org'), 'newco')

    const bot = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'newco'], env)
    t.equal(bot.code, 0, bot.stderr)
    t.match(bot.stderr, /^warning: org "newco" has no record/m)
    t.match(bot.stdout, /shown only this once/)

    t.equal((await runCli(['orgs', 'put', 'newco', '--name', 'NewCo'], env)).code, 0)
    const again = await runCli(['users', 'put', 'nora', '--org', 'newco', '--role', 'reader'], env)
    t.equal(again.code, 0)
    t.equal(again.stderr, '', 'no warning once the org has a record')

    const keeps = await runCli(['users', 'put', 'nora', '--role', 'writer', '--json'], env)
    t.equal(keeps.code, 0, `an existing user: --role without --org (${keeps.stderr})`)
    t.same(JSON.parse(keeps.stdout), { id: 'nora', org: 'newco', role: 'writer', created: false }, 'it keeps its org')
    t.same(await gw.client.hmget(`${gw.prefix}user:nora`, 'org', 'role'), ['newco', 'writer'])
    t.equal(keeps.stderr, '', 'the org it keeps has a record: no warning')

    const fresh = await runCli(['users', 'put', 'nobody-yet', '--role', 'reader'], env)
    t.equal(fresh.code, 1, 'a new user without --org: exit 1')
    t.match(fresh.stderr, /^error: user "nobody-yet" does not exist: a new user needs an org$/m)
    t.equal(await gw.client.exists(`${gw.prefix}user:nobody-yet`), 0, 'nothing written')
  })
})
