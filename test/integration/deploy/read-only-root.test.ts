/**
 * The manifests run keygate on a read-only root file system with no writable volume, so
 * `keygate serve` must write nothing to disk. It runs here under `strace -f` with the
 * manifests' own keygate.yaml (listeners on loopback, a test upstream), answers probes,
 * metrics, proxied requests with and without a key and an authorizer decision, flushes
 * usage counts, and stops on SIGTERM; no file is opened for writing, created, renamed or
 * removed, in any of its threads.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import type { IConfigMap } from 'kubernetes-models/v1'
import { BIN, runCli } from '../../helpers/cli.js'
import { KUBERNETES_DIR, kustomize } from '../../helpers/kubernetes.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { startUpstream } from '../../helpers/upstream.js'
import { until } from '../../helpers/wait.js'

/** Calls that change the file system, and opens that could (flags of open/openat/openat2). */
const CHANGES = /^\d+\s+(creat|mkdir|mkdirat|rename|renameat2?|unlink|unlinkat|rmdir|truncate|link|linkat|symlink|symlinkat)\(/
const WRITE_OPEN = /^\d+\s+open(at2?)?\(.*(O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND)/
const TRACED = 'open,openat,openat2,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,rmdir,truncate,' +
  'link,linkat,symlink,symlinkat'

t.test('keygate serve with the manifests\' configuration writes nothing to disk', async (t) => {
  const redis = await startRedis()
  t.teardown(async () => { await redis.stop() })
  const upstream = await startUpstream()
  t.teardown(async () => { await upstream.close() })
  const dir = mkdtempSync(join(tmpdir(), 'keygate-read-only-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })

  const base = kustomize(fileURLToPath(new URL('base', KUBERNETES_DIR)))
  const configMap = base.find((o) => o.kind === 'ConfigMap') as IConfigMap
  const config = parse(configMap.data?.['keygate.yaml'] ?? '') as Record<string, Record<string, unknown>>
  config.redis = { ...config.redis, prefix: uniquePrefix() }
  config.upstreams = { core: { url: upstream.url } }
  config.authz = { ...config.authz, trusted_peers: ['127.0.0.0/8'] }
  config.usage = { flush_ms: 200 }
  const file = join(dir, 'keygate.yaml')
  writeFileSync(file, JSON.stringify(config))
  const [port, adminPort, authzPort] = [await freePort(), await freePort(), await freePort()]
  const env = {
    KEYGATE_CONFIG: file,
    KEYGATE_REDIS_URL: redis.url,
    KEYGATE_LISTEN: `127.0.0.1:${port}`,
    KEYGATE_ADMIN_LISTEN: `127.0.0.1:${adminPort}`,
    KEYGATE_AUTHZ_LISTEN: `127.0.0.1:${authzPort}`
  }

  // a key, made before the traced process starts
  t.equal((await runCli(['roles', 'put', 'viewer', '--permissions', 'users:read'], env)).code, 0)
  t.equal((await runCli(['users', 'put', 'alice', '--org', 'acme', '--role', 'viewer'], env)).code, 0)
  const created = await runCli(['keys', 'create', '--type', 'personal', '--user', 'alice', '--json'], env)
  const key = (JSON.parse(created.stdout) as { key: string }).key
  t.match(key, /^kg_/)

  // NODE_OPTIONS as the image sets it (read off the Dockerfile), and without the test
  // runner's own, which records each process it spawns in a file
  const imageNodeOptions = /^ENV NODE_OPTIONS=(.*)$/m.exec(readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8'))?.[1]
  t.ok(imageNodeOptions, 'the Dockerfile sets NODE_OPTIONS')
  const trace = join(dir, 'strace.log')
  const child = spawn('strace', ['-f', '-qq', '-e', `trace=${TRACED}`, '-o', trace,
    '-E', `NODE_OPTIONS=${imageNodeOptions ?? ''}`, process.execPath, BIN, 'serve'],
  { env: { PATH: process.env.PATH, ...env } })
  let stdout = ''
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  await until(async () => (await send(adminPort, 'GET', '/readyz').catch(() => undefined))?.status === 200,
    60_000, 'keygate ready', 50)

  for (const path of ['/healthz', '/readyz', '/metrics']) t.equal((await send(adminPort, 'GET', path)).status, 200, path)
  const auth = { authorization: `Bearer ${key}` }
  t.equal((await send(port, 'GET', '/api/v1/users', auth)).status, 200, 'proxied with the key')
  t.equal((await send(port, 'GET', '/api/v1/users')).status, 401, 'refused without')
  t.equal((await send(authzPort, 'GET', '/api/v1/users', auth)).status, 200, 'an authorizer decision')
  await new Promise((resolve) => setTimeout(resolve, 1000))   // usage flushes (every 200 ms)

  // keygate's own pid is in its log lines (strace is the child)
  const pid = Number(/"pid":(\d+)/.exec(stdout)?.[1])
  t.ok(pid > 0 && pid !== child.pid, 'keygate\'s pid, from its log')
  process.kill(pid, 'SIGTERM')
  t.equal(await exited, 0, 'keygate stopped cleanly')

  const lines = readFileSync(trace, 'utf8').split('\n')
  const opened = lines.filter((l) => /^\d+\s+open(at2?)?\(/.test(l))
  t.ok(opened.length > 100, `traced: ${opened.length} files opened`)
  t.same(lines.filter((l) => WRITE_OPEN.test(l) || CHANGES.test(l)), [], 'none for writing, none changed')
})
