/**
 * `log.format: pretty` (docs/configuration.md): `keygate serve` writes text a person reads at a
 * terminal, level names and local times instead of numbers, the start-up lines and the request
 * lines alike; the default stays one JSON object a line.
 */
import t from 'tap'
import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { send } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { startUpstream } from '../../helpers/upstream.js'
import { until } from '../../helpers/wait.js'

const redis = await startRedis()
t.teardown(() => redis.stop())
const upstream = await startUpstream()
t.teardown(() => upstream.close())

async function serve (t: Test, format: string | undefined): Promise<() => string> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-log-format-')), 'keygate.yaml')
  writeFileSync(file, JSON.stringify({
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${adminPort}`,
    redis: { prefix: uniquePrefix() },
    upstreams: { core: { url: upstream.url } },
    routes: [{ prefix: '/api/v1', upstream: 'core' }],
    rules: [{ method: 'GET', path: '/api/v1/users', permissions: ['users:read'] }],
    ...(format === undefined ? {} : { log: { format } })
  }))
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file], {
    env: { PATH: process.env.PATH, KEYGATE_REDIS_URL: redis.url }
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { out += d.toString() })
  t.teardown(async () => {
    if (child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  })
  await until(() => out.includes('keygate listening'), 30_000, `keygate listening (${out})`)
  const res = await send(port, 'GET', '/api/v1/users')
  t.equal(res.status, 401, 'a request without a key')
  await until(() => out.includes('missing_credential'), 5000, 'its request line')
  return () => out
}

t.test('pretty: level names and times, no JSON objects', async (t) => {
  const out = await serve(t, 'pretty')
  const lines = out().split('\n').filter((l) => l !== '')
  const listening = lines.find((l) => l.includes('keygate listening'))
  t.match(listening, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] INFO \(\d+\): keygate listening/,
    'the start-up line: local time, level name, pid, message')
  const request = lines.find((l) => l.includes('missing_credential'))
  t.match(request, /\] INFO \(\d+\): request \{.*"status":401/, 'the request line, its fields after the message')
  t.notOk(lines.some((l) => l.startsWith('{')), 'no line is a JSON object')
  t.notMatch(out(), /"level":30/, 'no numeric level')
})

t.test('json, the default: one JSON object a line', async (t) => {
  const out = await serve(t, undefined)
  const lines = out().split('\n').filter((l) => l !== '')
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  t.ok(parsed.some((l) => l.msg === 'keygate listening' && l.level === 30), 'the start-up line as JSON')
  t.ok(parsed.some((l) => l.reason === 'missing_credential' && l.status === 401), 'the request line as JSON')
})
