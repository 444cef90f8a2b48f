/**
 * The assertion's key through the real `keygate` executable: `assertion-key generate`
 * writes one (mode 0600, never over an existing file) and prints its kid; `serve` signs
 * with it and serves its JWK Set; a missing, unreadable or unfit key file stops `serve`
 * (exit 1) and fails `config check`, naming the setting; buildApp refuses it too.
 */
import t from 'tap'
import { standardWorld } from '../../helpers/world.js'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { buildApp } from '../../../src/app.js'
import { parseConfig } from '../../../src/config/load.js'
import { createLogger } from '../../../src/logger.js'
import { writeKeyFile, writeTextFile } from '../../helpers/assertion-keys.js'
import { BIN, pooled, runCli, type CliRun } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { until } from '../../helpers/wait.js'

const PATH = process.env.PATH
const tempDir = (): string => mkdtempSync(join(tmpdir(), 'keygate-assertion-cli-'))

/** A servable config file with assertions on. */
function configFile (extra: Record<string, unknown> = {}, assertion: Record<string, unknown> = {}): string {
  const file = join(tempDir(), 'keygate.yaml')
  writeFileSync(file, JSON.stringify({
    upstreams: { core: { url: 'http://127.0.0.1:1' } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    identity: { assertion: { enabled: true, ...assertion } },
    ...extra
  }))
  return file
}

t.test('assertion-key generate', async (t) => {
  const dir = tempDir()

  t.test('writes a PKCS#8 key, mode 0600, and prints its kid', async (t) => {
    const file = join(dir, 'es256.pem')
    const run = await runCli(['assertion-key', 'generate', file, '--json'], {})
    t.equal(run.code, 0, run.stderr)
    const out = JSON.parse(run.stdout) as { file: string, alg: string, kid: string }
    t.same(Object.keys(out).sort(), ['alg', 'file', 'kid'])
    t.equal(out.file, file)
    t.equal(out.alg, 'ES256', 'ES256 by default')
    t.match(out.kid, /^[A-Za-z0-9_-]{43}$/)
    t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only')
    t.match(readFileSync(file, 'utf8'), /^-----BEGIN PRIVATE KEY-----\n/)
    t.notMatch(run.stdout + run.stderr, /PRIVATE KEY/, 'the key is never printed')
    const config = parseConfig(readFileSync(configFile(), 'utf8'), { KEYGATE_ASSERTION_KEY_FILE: file })
    t.equal(config.identity.assertion.key_file, file, 'the loader accepts it')
  })

  t.test('--alg EdDSA; the human output names the kid', async (t) => {
    const file = join(dir, 'ed25519.pem')
    const run = await runCli(['assertion-key', 'generate', file, '--alg', 'EdDSA'], {})
    t.equal(run.code, 0, run.stderr)
    t.match(run.stdout, new RegExp(`^wrote ${file} \\(EdDSA, kid [A-Za-z0-9_-]{43}\\)\\n$`))
  })

  t.test('an existing file is never overwritten (exit 1)', async (t) => {
    const file = join(dir, 'taken.pem')
    writeFileSync(file, 'precious')
    const run = await runCli(['assertion-key', 'generate', file], {})
    t.equal(run.code, 1)
    t.match(run.stderr, /already exists; a key file is never overwritten/)
    t.equal(readFileSync(file, 'utf8'), 'precious', 'the file is unchanged')
  })

  t.test('an unknown algorithm is bad usage (exit 2), nothing written', async (t) => {
    const file = join(dir, 'rsa.pem')
    const run = await runCli(['assertion-key', 'generate', file, '--alg', 'RS256'], {})
    t.equal(run.code, 2)
    t.match(run.stderr, /Allowed choices are ES256, EdDSA/)
    t.throws(() => statSync(file), 'no file')
  })
})

t.test('serve signs with the generated key: the printed kid, the served JWK Set, a verifiable upstream assertion', async (t) => {
  const { redis, upstream, prefix, fixtures } = await standardWorld(t)
  const alice = await fixtures.personalKey('alice')

  const keyFile = join(tempDir(), 'assertion.pem')
  const generated = await runCli(['assertion-key', 'generate', keyFile, '--alg', 'EdDSA', '--json'], {})
  t.equal(generated.code, 0, generated.stderr)
  const { kid } = JSON.parse(generated.stdout) as { kid: string }

  const port = await freePort()
  const adminPort = await freePort()
  const file = configFile({
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${adminPort}`,
    redis: { prefix },
    upstreams: { core: { url: upstream.url } },
    rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }],
    log: { level: 'silent' }
  }, { issuer: 'edge-1' })
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { PATH, KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: redis.url, KEYGATE_ASSERTION_KEY_FILE: keyFile }
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  await until(async () => (await send(adminPort, 'GET', '/readyz').catch(() => undefined))?.status === 200, 10_000, `serve ready (${stderr})`, 25)

  const jwksRes = await send(adminPort, 'GET', '/.well-known/jwks.json')
  t.equal(jwksRes.status, 200)
  const jwks = jwksRes.json() as { keys: Array<{ kid: string, alg: string }> }
  t.same(jwks.keys.map((k) => [k.kid, k.alg]), [[kid, 'EdDSA']], 'the JWK Set holds the generated key, under the printed kid')

  const res = await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  t.equal(res.status, 200)
  const token = upstream.last()?.headers['x-auth-assertion'] as string
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]), { issuer: 'edge-1', typ: 'JWT', algorithms: ['EdDSA'] })
  t.equal(protectedHeader.kid, kid)
  t.match(payload, { sub: 'alice', htm: 'GET', htu: '/api/v1/users', jti: res.headers['x-request-id'] })

  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'stops cleanly')
})

t.test('an unfit key file stops serve and fails config check, naming the setting', async (t) => {
  const good = writeKeyFile('ES256')
  const rsa = writeTextFile('rsa.pem', (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const missing = join(tempDir(), 'no-such-key.pem')
  const cases: Array<[string, string, Record<string, string>, RegExp]> = [
    ['missing key file', configFile(), { KEYGATE_ASSERTION_KEY_FILE: missing }, /KEYGATE_ASSERTION_KEY_FILE: cannot read .*no-such-key\.pem: no such file/],
    ['unreadable key file (a directory)', configFile(), { KEYGATE_ASSERTION_KEY_FILE: tempDir() }, /KEYGATE_ASSERTION_KEY_FILE: cannot read .*: a directory/],
    ['wrong key type', configFile(), { KEYGATE_ASSERTION_KEY_FILE: rsa }, /KEYGATE_ASSERTION_KEY_FILE: .*rsa\.pem holds a rsa key/],
    ['on without a key', configFile(), {}, /identity\.assertion\.enabled: a signing key is needed: set KEYGATE_ASSERTION_KEY_FILE/],
    ['key_file in the file', configFile({}, { key_file: missing }), {}, /identity\.assertion\.key_file: cannot read .*: no such file/],
    ['a missing previous key', configFile({}, { previous_key_files: [good.publicFile, missing] }), { KEYGATE_ASSERTION_KEY_FILE: good.file }, /identity\.assertion\.previous_key_files\[1\]: cannot read .*: no such file/]
  ]
  // each case's two runs are processes of their own: two at a time
  const runs = await pooled(cases.flatMap(([, file, env]) => [
    async () => await runCli(['serve'], { KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: 'redis://127.0.0.1:1', ...env }),
    async () => await runCli(['config', 'check', file], env)
  ]))
  for (const [i, [what, , , expected]] of cases.entries()) {
    const serve = runs[2 * i] as CliRun
    t.equal(serve.code, 1, `serve, ${what}: exit 1`)
    t.match(serve.stderr, expected, `serve, ${what}: the message names the setting`)
    t.equal(serve.stdout, '', 'nothing was started')
    const check = runs[2 * i + 1] as CliRun
    t.equal(check.code, 1, `config check, ${what}: exit 1`)
    t.match(check.stderr, expected, `config check, ${what}`)
  }
  const ok = await runCli(['config', 'check', configFile()], { KEYGATE_ASSERTION_KEY_FILE: good.file })
  t.equal(ok.code, 0, ok.stderr)
})

t.test('buildApp refuses a key file that became unfit after the config was loaded', async (t) => {
  const key = writeKeyFile('EdDSA')
  const config = parseConfig(readFileSync(configFile(), 'utf8'), { KEYGATE_ASSERTION_KEY_FILE: key.file })
  writeFileSync(key.file, 'gone')
  await t.rejects(buildApp(config, { logger: createLogger('silent') }), /KEYGATE_ASSERTION_KEY_FILE \/ identity\.assertion\.key_file: .* is not an unencrypted PEM PKCS#8 private key/)
})
