/**
 * A key's scope and addresses through the real `keygate` executable: `keys create
 * --scope --allow-cidr`, `keys restrict` (a list sets, `none` removes), `keys show` and
 * `keys list` show both, and `keygate check` names which of role, scope or address
 * refused, with the effective permissions, deciding for the address `--from` gives.
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { eventually, startGateway } from '../../helpers/gateway.js'

interface Created { id: string, key: string, scope?: string[], allowed_cidrs?: string[] }

t.test('keys create --scope --allow-cidr, keys restrict, show, list and check', async (t) => {
  const gw = await startGateway(t)
  const env = cliEnv(gw)
  const cli = async (...args: string[]): Promise<unknown> => {
    const r = await runCli([...args, '--json'], env)
    if (r.code !== 0) throw new Error(`keygate ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}`)
    return JSON.parse(r.stdout)
  }
  const k = await cli('keys', 'create', '--type', 'bot', '--role', 'writer', '--org', 'acme', '--scope', 'users:read', '--allow-cidr', '127.0.0.0/8', '--allow-cidr', '::1') as Created
  t.same(k.scope, ['users:read'])
  t.same(k.allowed_cidrs, ['127.0.0.0/8', '::1'])
  t.equal((await gw.get('/api/v1/users', k.key)).status, 200)
  t.match(await cli('keys', 'show', k.id), { scope: ['users:read'], allowed_cidrs: ['127.0.0.0/8', '::1'] })
  const table = await runCli(['keys', 'list', '--org', 'acme'], env)
  t.match(table.stdout, /SCOPE\s+ALLOWED_CIDRS/)
  t.match(table.stdout, /users:read\s+127\.0\.0\.0\/8 ::1/)

  const bad = await runCli(['keys', 'create', '--type', 'personal', '--user', 'alice', '--scope', 'Users:Read', '--allow-cidr', '10.0.0.0/99', '--json'], env)
  t.not(bad.code, 0, 'a bad scope and address are refused')
  t.match(bad.stderr + bad.stdout, /Users:Read/)
  t.match(bad.stderr + bad.stdout, /10\.0\.0\.0\/99/)

  const check = async (method: string, path: string, from?: string): Promise<{ code: number | null, e: Record<string, unknown> }> => {
    const r = await runCli(['check', method, path, '--json', ...from === undefined ? [] : ['--from', from]], { ...env, KEYGATE_KEY: k.key })
    return { code: r.code, e: JSON.parse(r.stdout) as Record<string, unknown> }
  }
  const scoped = await check('POST', '/api/v1/users', '127.0.0.1')
  t.equal(scoped.code, 3)
  t.match(scoped.e, { reason: 'missing_permission', refused_by: ['scope'], scope: ['users:read'], permissions: ['users:read'], role_permissions: ['users:*'] }, 'the scope refused, the role would not have')
  const role = await check('GET', '/api/v1/orgs/acme/x', '127.0.0.1')
  t.match(role.e, { reason: 'missing_permission', refused_by: ['role', 'scope'] })
  const address = await check('GET', '/api/v1/users', '198.51.100.1')
  t.match(address.e, { reason: 'address_not_allowed', refused_by: ['address'], allowed_cidrs: ['127.0.0.0/8', '::1'], from: '198.51.100.1' })
  t.equal((await check('GET', '/api/v1/users', '::1')).code, 0, 'from an allowed address: allowed')
  const human = await runCli(['check', 'POST', '/api/v1/users', '--from', '127.0.0.1'], { ...env, KEYGATE_KEY: k.key })
  t.match(human.stdout, /effective users:read/)
  t.match(human.stdout, /refused\s+by the scope/)

  const restricted = await cli('keys', 'restrict', k.id, '--scope', 'users:read users:write', '--allow-cidr', 'none') as { scope: string[] | null, allowed_cidrs: string[] | null, changed: boolean }
  t.same(restricted, { id: k.id, scope: ['users:read', 'users:write'], allowed_cidrs: null, changed: true })
  t.ok(await eventually(async () => (await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${k.key}` }, '{}')).status === 200, 1000) >= 0, 'the gateway applies it within 1 s')
  t.same(await cli('keys', 'restrict', k.id, '--scope', 'none'), { id: k.id, scope: null, allowed_cidrs: null, changed: true })
  const usage = await runCli(['keys', 'restrict', k.id], env)
  t.equal(usage.code, 2, 'restrict with nothing to change: a usage error')
})
