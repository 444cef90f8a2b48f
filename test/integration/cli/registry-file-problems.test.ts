/**
 * A registry file with several problems, through the real `keygate` executable: plan
 * and apply list them all at once, each with its line and column (and its path in the
 * document), in the order of the file, exit 1, and nothing is written.
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { dumpRegistry, registryFile } from '../../helpers/registry-files.js'

const file = registryFile
const dump = dumpRegistry

t.test('a file with several problems lists them all, with their places, and writes nothing', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  await gw.fixtures.role('streamer', ['users:read'])
  await gw.fixtures.botKey('streamer', 'acme')
  const bad = file([
    'roles:', //                                        1
    '  reader:', //                                     2
    '    permissions: [users:read, NOT_A_PERMISSION]', // 3
    '  writer:', //                                     4
    '    permissions: ["users:*"]', //                  5
    '    colour: blue', //                              6
    'users:', //                                        7
    '  alice: { org: acme, role: ghost }', //           8
    '  "bot:x": { org: acme, role: reader }', //        9
    '  carol: { org: globex, role: orgreader, status: gone }', // 10
    '  erin: { org: acme }', //                         11
    ''
  ].join('\n'))
  const before = await dump(gw)
  for (const command of ['plan', 'apply']) {
    const run = await runCli(['registry', command, bad, '--prune'], env)
    t.equal(run.code, 1, `${command}: exit 1`)
    const lines = run.stderr.trim().split('\n')
    t.same(lines, [
      `${bad}:3:31: roles.reader.permissions[1]: invalid permission "NOT_A_PERMISSION" (expected resource:action, resource:* or *, in lower case)`,
      `${bad}:6:5: roles.writer.colour: unknown field (expected permissions, description, rate_limit)`,
      `${bad}:8:29: users.alice.role: role "ghost" does not exist (neither in the file nor in the registry)`,
      `${bad}:9:3: users.bot:x: invalid user id "bot:x": an id starting with "bot:" names a BOT key in signed assertions`,
      `${bad}:10:31: users.carol.role: role "orgreader" would be pruned`,
      `${bad}:10:50: users.carol.status: expected active or deactivated`,
      `${bad}:11:3: users.erin: role is required`,
      `${bad}: roles.streamer: --prune would delete role "streamer", which active BOT keys act with (${(await gw.client.smembers(gw.fixtures.keys.keys))[0] ?? ''}): keep it in the file, or revoke them first`,
      `${bad}: 8 problems; nothing ${command === 'apply' ? 'was' : 'would be'} changed`
    ], `${command}: every problem at once, in the order of the file`)
  }
  const json = await runCli(['registry', 'plan', bad, '--json'], env)
  t.match(JSON.parse(json.stdout), { ok: false, problems: [{ line: 3, col: 31, path: 'roles.reader.permissions[1]' }] })
  const broken = file('roles:\n  reader: [\n')
  const syntax = await runCli(['registry', 'apply', broken], env)
  t.equal(syntax.code, 1, 'YAML that does not parse: exit 1')
  t.match(syntax.stderr, new RegExp(`${broken}:\\d+:\\d+: `))
  t.same(await dump(gw), before, 'nothing was written, not even an audit entry')
})
