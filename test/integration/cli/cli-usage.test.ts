/**
 * `keygate usage`: the same points as the admin API's usage routes, as a table or JSON,
 * for a key and for an org; a key id or --org is required (exit 2 otherwise), an
 * unknown key is exit 1.
 */
import t from 'tap'
import { adminCall, startGateway } from '../../helpers/gateway.js'
import { cliEnv, runCli } from '../../helpers/cli.js'

const TOKEN = 'cli-usage-admin-token-0123456789abcdef'

t.test('keygate usage prints what the admin API answers', async (t) => {
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }', env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const env = cliEnv(gw)
  const alice = await gw.fixtures.personalKey('alice')
  for (let i = 0; i < 4; i++) t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status, 403)
  await gw.app.counter.flush()

  const json = await runCli(['usage', alice.id, '--since', '10m', '--step', '1m', '--json'], env)
  t.equal(json.code, 0, json.stderr)
  const points = (JSON.parse(json.stdout) as { points: Array<{ t: string, allowed: number, refused: number }> }).points
  t.ok(points.length >= 10 && points.length <= 12, 'a point per minute of the last 10 minutes')
  t.equal(points.reduce((n, p) => n + p.allowed, 0), 4)
  t.equal(points.reduce((n, p) => n + p.refused, 0), 1)
  const from = points[0]?.t as string
  const to = new Date(Date.parse(points.at(-1)?.t as string) + 60_000).toISOString()
  const api = await adminCall(gw, 'GET', `/admin/v1/keys/${alice.id}/usage?from=${from}&to=${to}&step=1m`, TOKEN)
  t.same(api.json(), { env: 'live', points }, 'the same points as the admin API, with the key\'s environment')
  t.equal((JSON.parse(json.stdout) as { env: string }).env, 'live', 'the key\'s environment')

  const table = await runCli(['usage', alice.id, '--since', '2m', '--step', '1m'], env)
  t.equal(table.code, 0, table.stderr)
  t.match(table.stdout, new RegExp(`^key ${alice.id} \\(live\\)\nT\\s+ALLOWED\\s+REFUSED\\s+LIMITED\\s+ERRORS\n`), 'the key\'s environment, then a table with a header')
  t.match(table.stdout, /\n\S+Z\s+4\s+1\s+0\s+0\s*\n/, 'and the minute of the requests')
  const org = await runCli(['usage', '--org', 'acme', '--since', '1h', '--json'], env)
  t.equal(org.code, 0, org.stderr)
  t.equal((JSON.parse(org.stdout) as { points: Array<{ allowed: number }> }).points.reduce((n, p) => n + p.allowed, 0), 4, 'the org sums its keys')

  const twoDays = await runCli(['usage', alice.id, '--since', '48h', '--step', '1m', '--json'], env)
  t.equal(twoDays.code, 0, `--since 48h --step 1m: every minute kept (${twoDays.stderr})`)
  t.equal((JSON.parse(twoDays.stdout) as { points: unknown[] }).points.length, 2880, '2,880 points')

  t.equal((await runCli(['usage'], env)).code, 2, 'no key id nor --org: bad usage')
  t.equal((await runCli(['usage', alice.id, '--org', 'acme'], env)).code, 2, 'both: bad usage')
  t.equal((await runCli(['usage', alice.id, '--step', '5m'], env)).code, 2, 'an unknown step: bad usage')
  t.equal((await runCli(['usage', alice.id, '--since', '400d', '--step', '1m'], env)).code, 2, 'too many points: bad usage')
  t.equal((await runCli(['usage', 'AAAAAAAAAAAAAAAA'], env)).code, 1, 'an unknown key: a failed operation')
})
