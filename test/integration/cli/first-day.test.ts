/**
 * The start command and the CLI as a newcomer and a supervisor meet them:
 * - `npm start` is the gateway itself: a supervisor's SIGTERM to the npm process stops
 *   the gateway (its ports are free again), never leaves it orphaned;
 * - `keygate serve --config <file>` serves that file, without KEYGATE_CONFIG;
 * - run where there is no config/keygate.yaml, `serve` names the file it looked for and
 *   how to name another;
 * - a reader that stops early (`keygate ... | head`) ends the command quietly, exit 0,
 *   no EPIPE stack trace.
 */
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BIN } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { until } from '../../helpers/wait.js'
import { standardWorld } from '../../helpers/world.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const PATH = process.env.PATH

interface Ports { port: number, adminPort: number, file: string }

async function configFor (redisPrefix: string, upstreamUrl: string): Promise<Ports> {
  const port = await freePort()
  const adminPort = await freePort()
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-first-day-')), 'gateway.yaml')
  writeFileSync(file, JSON.stringify({
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${adminPort}`,
    redis: { prefix: redisPrefix },
    upstreams: { core: { url: upstreamUrl } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }],
    log: { level: 'silent' }
  }))
  return { port, adminPort, file }
}

function exited (child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode)
    else child.once('exit', (code) => { resolve(code) })
  })
}

const refusesConnections = async (port: number): Promise<boolean> =>
  await send(port, 'GET', '/healthz').then(() => false, (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED')

t.test('npm start is the gateway: a SIGTERM to npm stops it and frees its ports', async (t) => {
  const { redis, upstream, prefix, fixtures } = await standardWorld(t)
  const alice = await fixtures.personalKey('alice')
  const { port, adminPort, file } = await configFor(prefix, upstream.url)
  const npm = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { PATH, KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: redis.url } })
  let stderr = ''
  npm.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  npm.stdout.resume()
  t.teardown(() => { if (npm.exitCode === null) npm.kill('SIGKILL') })
  await until(async () => (await send(adminPort, 'GET', '/readyz').catch(() => undefined))?.status === 200,
    30_000, `npm start ready (${stderr})`, 50)
  t.equal((await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status, 200,
    'the gateway npm start runs serves')

  npm.kill('SIGTERM')
  await exited(npm)
  await until(async () => await refusesConnections(port) && await refusesConnections(adminPort), 15_000,
    'both ports to be free again', 50)
  t.pass('after npm exits, no gateway holds the data or the admin port')
})

t.test('keygate serve --config <file> serves that file', async (t) => {
  const { redis, upstream, prefix, fixtures } = await standardWorld(t)
  const alice = await fixtures.personalKey('alice')
  const { port, adminPort, file } = await configFor(prefix, upstream.url)
  const serve = spawn(process.execPath, [BIN, 'serve', '--config', file], { env: { PATH, KEYGATE_REDIS_URL: redis.url } })
  serve.stdout.resume()
  serve.stderr.resume()
  t.teardown(() => { if (serve.exitCode === null) serve.kill('SIGKILL') })
  await until(async () => (await send(adminPort, 'GET', '/readyz').catch(() => undefined))?.status === 200,
    20_000, 'serve --config ready', 50)
  t.equal((await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status, 200,
    'the routes and rules of the file named')
  serve.kill('SIGTERM')
  t.equal(await exited(serve), 0, 'a graceful stop')
})

t.test('serve without a config file names the file it looked for and how to name one', async (t) => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'keygate-no-config-'))
  const serve = spawn(process.execPath, [BIN, 'serve'], { cwd: elsewhere, env: { PATH } })
  let stderr = ''
  serve.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  serve.stdout.resume()
  t.equal(await exited(serve), 1, 'exit 1')
  t.match(stderr, /config\/keygate\.yaml/, 'the default file it looked for')
  t.match(stderr, /KEYGATE_CONFIG/, 'the variable that names another')
  t.match(stderr, /--config/, 'and the option')
})

t.test('a reader that stops early ends the command quietly', async (t) => {
  for (const args of [['--help'], ['keys', '--help']]) {
    const cli = spawn(process.execPath, [BIN, ...args], { env: { PATH } })
    cli.stdout.destroy() // the reader is gone before the first line is written
    let stderr = ''
    cli.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    t.equal(await exited(cli), 0, `keygate ${args.join(' ')}: exit 0`)
    t.notMatch(stderr, /EPIPE|Error/, 'no stack trace')
  }
})
