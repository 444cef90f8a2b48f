/**
 * `keygate config check --connect` (README, "Running it for real"): after the file, Redis
 * (PING) and every upstream origin (GET /, any status answers) must answer. One line each;
 * a failure names what, where and why on stderr, and exits 1. Real Redis, a real upstream,
 * and ports where nothing listens.
 */
import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { startUpstream } from '../../helpers/upstream.js'

const redis = await startRedis()
t.teardown(() => redis.stop())
const upstream = await startUpstream({ mode: { kind: 'status', status: 404 } })
t.teardown(() => upstream.close())
const nobody = await freePort()

function configWith (upstreams: Record<string, string>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-connect-')), 'keygate.yaml')
  writeFileSync(file, JSON.stringify({
    redis: { prefix: uniquePrefix(), connect_timeout_ms: 1000 },
    upstreams: Object.fromEntries(Object.entries(upstreams).map(([name, url]) => [name, { url, connect_timeout_ms: 1000 }])),
    routes: Object.keys(upstreams).map((name) => ({ prefix: `/${name}`, upstream: name })),
    rules: [{ method: 'GET', path: `/${Object.keys(upstreams)[0] ?? 'core'}/x`, permissions: ['x:read'] }]
  }))
  return file
}

t.test('everything answers: exit 0, one ok line each', async (t) => {
  const file = configWith({ core: upstream.url })
  const r = await runCli(['config', 'check', file, '--connect'], { KEYGATE_REDIS_URL: redis.url })
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, new RegExp(`^${file}: OK \\(1 routes, 1 rules\\)$`, 'm'))
  t.match(r.stdout, new RegExp(`^redis \\(standalone 127\\.0\\.0\\.1:${redis.port} db 0\\): ok, answered PING in \\d+ ms$`, 'm'))
  t.match(r.stdout, new RegExp(`^upstream core \\(${upstream.url}\\): ok, answered 404 to GET /$`, 'm'),
    'any status means the upstream answers')
  t.equal(r.stderr, '')
  t.ok(upstream.requests.some((q) => q.method === 'GET' && q.url === '/'), 'the upstream was asked')
})

t.test('an upstream that is not running: exit 1, named with its cause', async (t) => {
  const file = configWith({ core: upstream.url, billing: `http://127.0.0.1:${nobody}` })
  const r = await runCli(['config', 'check', file, '--connect'], { KEYGATE_REDIS_URL: redis.url })
  t.equal(r.code, 1)
  t.match(r.stderr, new RegExp(`^error: upstream billing \\(http://127\\.0\\.0\\.1:${nobody}\\): connection refused \\(nothing listens there\\)$`, 'm'))
  t.match(r.stdout, /^upstream core .*: ok/m, 'the others are still checked')
})

t.test('a wrong Redis URL: exit 1, the target tried (no password) and the cause', async (t) => {
  const file = configWith({ core: upstream.url })
  const r = await runCli(['config', 'check', file, '--connect', '--json'],
    { KEYGATE_REDIS_URL: `redis://:hunter2secret@127.0.0.1:${nobody}/0` })
  t.equal(r.code, 1)
  const out = JSON.parse(r.stdout) as { ok: boolean, connect: Array<{ what: string, target: string, ok: boolean, detail: string }> }
  t.equal(out.ok, false)
  t.same(out.connect.find((c) => c.what === 'redis'), {
    what: 'redis', target: `standalone 127.0.0.1:${nobody} db 0`, ok: false, detail: 'connection refused (nothing listens there)'
  })
  t.match(out.connect.find((c) => c.what === 'upstream core'), { ok: true })
  t.notOk((r.stdout + r.stderr).includes('hunter2secret'), 'the password is never printed')
})

t.test('without --connect nothing is reached', async (t) => {
  const file = configWith({ billing: `http://127.0.0.1:${nobody}` })
  const r = await runCli(['config', 'check', file], { KEYGATE_REDIS_URL: `redis://127.0.0.1:${nobody}` })
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout, `${file}: OK (1 routes, 1 rules)\n`)
})
