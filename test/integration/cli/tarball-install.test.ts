/**
 * The install path (README, "Install"): the package is `@keygate/gateway`, a scoped name the
 * project controls, and its `npm pack` tarball installs with `npm install -g` and puts `keygate`
 * on the PATH. Done here in a scratch prefix: pack (dist/ as `npm test` built it, so no script
 * runs), install the tarball globally into the prefix (its dependencies from the registry, as a
 * user's install takes them, but for ioredis, bundled as patches/ patched it), then run the
 * installed `keygate` from another directory.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

t.setTimeout(600_000)
const run = promisify(execFile)
const root = fileURLToPath(new URL('../../../', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string, version: string, bin: Record<string, string>
}
const scratch = mkdtempSync(join(tmpdir(), 'keygate-install-'))
t.teardown(() => { rmSync(scratch, { recursive: true, force: true }) })
// npm as the PATH has it (.ci/run puts the node it runs first on it)
const npm = 'npm'
const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }

t.test('the package name is scoped, the command is keygate', async (t) => {
  t.match(pkg.name, /^@keygate\//, 'a scoped name, never the unscoped "keygate" someone else may publish')
  t.same(Object.keys(pkg.bin), ['keygate'])
})

t.test('npm pack, npm install -g of the tarball, keygate on the prefix\'s PATH', async (t) => {
  const packed = await run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], { cwd: root, env })
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string, files: Array<{ path: string }> }>
  const tarball = info?.filename ?? ''
  t.equal(tarball, `keygate-gateway-${pkg.version}.tgz`, 'the tarball, named for the scoped package')
  const files = (info?.files ?? []).map((f) => f.path)
  t.ok(files.includes('dist/cli/main.js'), 'the built CLI is in it')
  t.ok(files.includes('config/keygate.yaml'), 'the commented default config is in it')
  t.ok(files.includes('deploy/systemd/keygate.service'), 'and the systemd unit')
  t.notOk(files.some((f) => f.startsWith('src/') || f.startsWith('test/')), 'no sources or tests')
  // ioredis travels in the tarball as the clone patched it (patches/README.md): the registry's copy is not
  t.ok(files.includes('node_modules/ioredis/built/Command.js'), 'ioredis is bundled')

  const prefix = join(scratch, 'prefix')
  await run(npm, ['install', '-g', '--prefix', prefix, '--omit=dev', '--prefer-offline', `./${tarball}`],
    { cwd: scratch, env, timeout: 480_000 })
  const bin = join(prefix, 'bin', 'keygate')
  t.ok(existsSync(bin), `${bin} exists`)
  const installed = join(prefix, 'lib', 'node_modules', ...pkg.name.split('/'), 'node_modules', 'ioredis', 'built')
  const patchedLines: Array<[string, string]> = [
    ['Command.js', 'const rejectCommand = '], ['Script.js', 'const rejectScript = '], ['DataHandler.js', 'item.command = null;']
  ]
  for (const [file, line] of patchedLines) {
    t.ok(readFileSync(join(installed, file), 'utf8').includes(line), `the installed ioredis is the patched one (${file})`)
  }

  // from a directory of its own, with nothing on the PATH but node
  const elsewhere = mkdtempSync(join(scratch, 'elsewhere-'))
  const bare = { PATH: `${join(prefix, 'bin')}:${join(process.execPath, '..')}` }
  const version = await run(bin, ['--version'], { cwd: elsewhere, env: bare })
  t.equal(version.stdout.trim(), pkg.version, 'keygate --version')

  const file = join(elsewhere, 'keygate.yaml')
  writeFileSync(file, 'upstreams: { core: { url: "http://127.0.0.1:9" } }\nroutes: [{ prefix: /api, upstream: core }]\n' +
    'rules: [{ method: GET, path: /api/x, permissions: [x:read] }]\n')
  const check = await run(bin, ['config', 'check', file], { cwd: elsewhere, env: bare })
  t.equal(check.stdout, `${file}: OK (1 routes, 1 rules)\n`, 'keygate config check, no Redis needed')
})
