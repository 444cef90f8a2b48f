/**
 * `keygate serve --workers 2`: two worker processes share the ports, each with its
 * own cache kept current by its own invalidation connection; a worker that dies is
 * replaced; SIGTERM stops them all.
 */
import t from 'tap'
import { standardWorld } from '../../helpers/world.js'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { until } from '../../helpers/wait.js'

interface Line { msg?: string, pid?: number, worker_pid?: number, req_id?: string }

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('serve --workers 2', async (t) => {
  const { redis, upstream, client, prefix, fixtures } = await standardWorld(t)
  const alice = await fixtures.personalKey('alice')
  const other = await fixtures.personalKey('bob')

  const port = await freePort()
  const adminPort = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'keygate-workers-'))
  const file = join(dir, 'keygate.yaml')
  writeFileSync(file, JSON.stringify({
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${adminPort}`,
    redis: { prefix },
    upstreams: { core: { url: upstream.url } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }]
  }))
  const child = spawn(process.execPath, [BIN, 'serve', '--workers', '2'], {
    env: { PATH: process.env.PATH, KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: redis.url }
  })
  const lines: Line[] = []
  let buffered = ''
  child.stdout.on('data', (d: Buffer) => {
    buffered += d.toString()
    const parts = buffered.split('\n')
    buffered = parts.pop() ?? ''
    for (const p of parts) if (p.startsWith('{')) lines.push(JSON.parse(p) as Line)
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const workerPids = new Set<number>()
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
    for (const pid of workerPids) if (alive(pid)) process.kill(pid, 'SIGKILL')
  })
  const started = (): number[] => lines.filter((l) => l.msg === 'worker started').map((l) => l.worker_pid as number)

  await until(() => started().length === 2, 10_000, 'two workers', 25)
  for (const pid of started()) workerPids.add(pid)
  await until(async () => {
    const res = await send(adminPort, 'GET', '/readyz').catch(() => undefined)
    return res?.status === 200 && lines.filter((l) => l.msg === 'cache: push invalidation established').length >= 2
  }, 10_000, 'both workers ready', 25)

  // Each request is a new connection; the primary deals connections to the workers in turn.
  const pidsServing = async (key: string, n: number, expected: number): Promise<Set<number>> => {
    const pids = new Set<number>()
    const ids: string[] = []
    for (let i = 0; i < n; i++) {
      const res = await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${key}` })
      t.equal(res.status, expected, `request ${i}: ${expected}`)
      ids.push(res.headers['x-request-id'] as string)
    }
    await until(() => ids.every((id) => lines.some((l) => l.req_id === id)), 10_000, 'the request log lines', 25)
    for (const id of ids) pids.add(lines.find((l) => l.req_id === id)?.pid as number)
    return pids
  }
  const serving = await pidsServing(alice.key, 10, 200)
  t.same([...serving].sort(), [...workerPids].sort(), 'both workers served requests')

  // One scrape answers for every worker: the primary aggregates their registries.
  for (let i = 0; i < 2; i++) {
    const scrape = await send(adminPort, 'GET', '/metrics')
    t.equal(scrape.status, 200)
    const allowed = [...scrape.body.matchAll(/^keygate_requests_total\{[^}]*status="200"[^}]*\} (\d+)/gm)]
      .reduce((sum, m) => sum + Number(m[1]), 0)
    t.equal(allowed, 10, `scrape ${i + 1}: the 10 allowed requests of both workers are counted once each`)
    t.match(scrape.body, /^keygate_log_lines_dropped_total 0$/m, "the stdout log sink's counters: nothing lost")
  }

  // A revocation made with a raw Redis client reaches both workers' caches.
  await client.hset(fixtures.keys.key(alice.id), 'status', 'revoked')
  await until(async () => {
    for (let i = 0; i < 6; i++) {
      if ((await send(port, 'GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })).status !== 401) return false
    }
    return true
  }, 2000, 'the revocation on every worker', 25)
  t.same([...await pidsServing(alice.key, 6, 401)].sort(), [...workerPids].sort(), 'both workers refuse the revoked key')

  // A worker that dies is replaced.
  const [victim] = [...workerPids]
  process.kill(victim as number, 'SIGKILL')
  await until(() => started().length === 3, 10_000, 'a replacement worker', 25)
  const replacement = started()[2] as number
  workerPids.add(replacement)
  t.ok(lines.some((l) => l.msg === 'worker died; replacing it' && l.worker_pid === victim), 'the death is logged')
  await until(() => lines.filter((l) => l.msg === 'cache: push invalidation established').length >= 3, 10_000, 'the replacement is ready', 25)
  const after = await pidsServing(other.key, 10, 200)
  t.ok(after.has(replacement), 'the replacement serves requests')
  t.notOk(after.has(victim as number), 'the dead worker does not')

  // SIGTERM stops everything.
  child.kill('SIGTERM')
  const code = await new Promise((resolve) => child.once('exit', resolve))
  t.equal(code, 0, `the primary exits 0 ${stderr}`)
  await until(() => [...workerPids].every((pid) => !alive(pid)), 5000, 'the workers to exit', 25)
  t.pass('every worker has exited')
})

t.test('--workers must be a positive integer or auto', async (t) => {
  const res = await new Promise<{ code: number | null, stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--workers', 'lots'], { env: { PATH: process.env.PATH } })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', (code) => { resolve({ code, stderr }) })
  })
  t.equal(res.code, 2, 'bad usage')
  t.match(res.stderr, /--workers must be a positive integer or "auto"/)
})
