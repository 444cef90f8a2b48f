/**
 * @keygate/client (clients/typescript) as a user gets it: `npm pack` (its prepack builds
 * dist/ with the .d.ts), the tarball installed into a scratch project (its dependency,
 * openapi-fetch, from the registry as a user's install takes it), then a script of that
 * project, using only the installed package, against a running keygate: it creates a key
 * with the typed admin calls, verifies it, asks who it is on the data plane and reads its
 * usage. A TypeScript consumer of the installed package type-checks.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startGateway } from '../../helpers/gateway.js'

t.setTimeout(600_000)
const run = promisify(execFile)
const root = fileURLToPath(new URL('../../../', import.meta.url))
const client = join(root, 'clients', 'typescript')
const pkg = JSON.parse(readFileSync(join(client, 'package.json'), 'utf8')) as { name: string, version: string }
const scratch = mkdtempSync(join(tmpdir(), 'keygate-client-'))
t.teardown(() => { rmSync(scratch, { recursive: true, force: true }) })
const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }
const TOKEN = 'client-test-admin-token-0123456789abcdef'

const SCRIPT = `
import { KeygateClient } from '@keygate/client'
const [adminUrl, authzUrl, gatewayUrl, verifyKey] = process.argv.slice(2)
const keygate = new KeygateClient({ adminUrl, adminCredential: process.env.ADMIN_TOKEN, authzUrl, verifyKey, gatewayUrl })
const { data: created, error } = await keygate.admin.POST('/admin/v1/keys', { body: { type: 'bot', role: 'reader', org: 'acme', name: 'from-client' } })
if (created === undefined) throw new Error(JSON.stringify(error))
const valid = await keygate.verify(created.key, { permissions: ['users:read'] })
const forbidden = await keygate.verify(created.key, { permissions: ['users:write'] })
const me = await keygate.self(created.key).whoami()
await new Promise((resolve) => setTimeout(resolve, 500))
const { data: usage } = await keygate.admin.GET('/admin/v1/keys/{id}/usage', { params: { path: { id: created.id }, query: { step: '1m' } } })
let refused
try { await new KeygateClient({ authzUrl, verifyKey: created.key }).verify(created.key) } catch (err) { refused = { name: err.name, status: err.status, code: err.code } }
console.log(JSON.stringify({ id: created.id, keyShown: created.key.startsWith('kg_'), valid, forbidden, me, usage, refused }))
`

const CONSUMER = `
import { KeygateClient, type VerifyAnswer } from '@keygate/client'
const keygate = new KeygateClient({ adminUrl: 'http://127.0.0.1:1' })
export async function roles (): Promise<string[]> {
  const { data } = await keygate.admin.GET('/admin/v1/roles')
  return (data?.roles ?? []).map((r) => r.name)
}
export const answer = (a: VerifyAnswer): string => a.valid ? a.org : a.code
`

t.test('npm pack, install the tarball, create, verify and read usage against a running keygate', async (t) => {
  const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: client, env, timeout: 300_000 })
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ filename: string, files: Array<{ path: string }> }>
  const tarball = info?.filename ?? ''
  t.equal(tarball, `keygate-client-${pkg.version}.tgz`)
  const files = (info?.files ?? []).map((f) => f.path)
  for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/admin-api.d.ts', 'README.md']) t.ok(files.includes(f), f)
  t.notOk(files.some((f) => f.startsWith('src/') || f.startsWith('scripts/')), 'no sources')

  const project = join(scratch, 'project')
  await run('mkdir', ['-p', project])
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }))
  await run('npm', ['install', '--prefer-offline', '--no-package-lock', join(scratch, tarball)], { cwd: project, env, timeout: 300_000 })
  t.ok(existsSync(join(project, 'node_modules', '@keygate', 'client', 'dist', 'index.d.ts')), 'installed, with its types')

  writeFileSync(join(project, 'consumer.ts'), CONSUMER)
  const tsc = join(root, 'node_modules', '.bin', 'tsc')
  await t.resolves(run(tsc, ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
    '--skipLibCheck', '--typeRoots', join(root, 'node_modules', '@types'), '--types', 'node', 'consumer.ts'], { cwd: project }), 'a typed consumer compiles')

  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"\nusage: { flush_ms: 100 }\n', env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('verifier', ['keygate:keys:verify'])
  const verifier = await gw.fixtures.botKey('verifier', 'acme')
  writeFileSync(join(project, 'run.mjs'), SCRIPT)
  const out = await run(process.execPath, ['run.mjs', `http://127.0.0.1:${gw.adminPort}`, `http://127.0.0.1:${gw.authzPort}`,
    `http://127.0.0.1:${gw.port}`, verifier.key], { cwd: project, env: { ...env, ADMIN_TOKEN: TOKEN }, timeout: 60_000 })
  interface Outcome {
    id: string
    keyShown: boolean
    valid: Record<string, unknown>
    forbidden: unknown
    me: Record<string, unknown>
    usage: { points: Array<{ allowed: number, refused: number }> }
    refused: unknown
  }
  const r = JSON.parse(out.stdout) as Outcome
  t.ok(r.keyShown, 'the created key is shown')
  t.match(r.valid, { valid: true, key_id: r.id, type: 'bot', org: 'acme', role: 'reader', permissions: ['users:read'] })
  t.same(r.forbidden, { valid: false, code: 'forbidden' })
  t.match(r.me, { id: r.id, org: 'acme', role: 'reader' })
  const allowed = r.usage.points.reduce((n, p) => n + p.allowed, 0)
  const refused = r.usage.points.reduce((n, p) => n + p.refused, 0)
  t.ok(allowed >= 2, `usage: ${allowed} allowed (a verify and the whoami)`)
  t.ok(refused >= 1, `usage: ${refused} refused (the forbidden verify)`)
  t.same(r.refused, { name: 'KeygateError', status: 403, code: 'forbidden' }, 'a caller without keygate:keys:verify')
})
