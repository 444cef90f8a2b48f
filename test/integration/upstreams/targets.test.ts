/**
 * An upstream with several targets (docs/routing.md): requests
 * balanced across the targets that are up (round robin, least_requests); a request
 * whose connection failed before any byte was sent retried once on another target when
 * its method is idempotent, never otherwise; no target up: 502 at once, nothing sent.
 * Real targets on real ports (test/helpers/targets.ts).
 */
import t from 'tap'
import { startGateway, eventually, type TestGateway } from '../../helpers/gateway.js'
import { startTarget, tally, targetsUp, type Target } from '../../helpers/targets.js'

const BAD_GATEWAY = { error: { code: 'bad_gateway', message: 'Upstream service unavailable', status: 502 } }
const CHECK = (interval: string, timeout: string, after: number): string =>
  `health_check: { path: /health, interval: ${interval}, timeout: ${timeout}, ` +
  `unhealthy_after: ${after}, healthy_after: ${after} }`

/** Each target's up state, by its URL. */
async function upStates (gw: TestGateway): Promise<Record<string, number>> {
  return await targetsUp(gw.app.metrics.registry, 'core')
}

const RULES = `rules:
  - { method: "*", path: /api/v1/open/*, permissions: [] }
`

function upstreamYaml (targets: Target[], extra: string): string {
  return `upstreams:
  core:
    targets: [${targets.map((x) => `"${x.url}"`).join(', ')}]
    timeout_ms: 3000
    connect_timeout_ms: 1000
${extra.split('\n').filter((l) => l !== '').map((l) => '    ' + l).join('\n')}
${RULES}`
}

async function threeTargets (t: Parameters<typeof startTarget>[0]): Promise<Target[]> {
  return [await startTarget(t, 'a'), await startTarget(t, 'b'), await startTarget(t, 'c')]
}

async function keyOf (gw: TestGateway): Promise<string> {
  return (await gw.fixtures.personalKey('alice')).key
}

t.test('round robin: each target in turn', async (t) => {
  const targets = await threeTargets(t)
  const gw = await startGateway(t, { yaml: upstreamYaml(targets, '') })
  const key = await keyOf(gw)
  const bodies: string[] = []
  for (let i = 0; i < 30; i++) {
    const res = await gw.get(`/api/v1/open/${i}`, key)
    t.equal(res.status, 200)
    bodies.push(res.body)
  }
  t.same(tally(bodies), { a: 10, b: 10, c: 10 }, 'ten requests each')
  const order = bodies.slice(0, 6).map((b) => (JSON.parse(b) as { target: string }).target)
  t.same(order, ['a', 'b', 'c', 'a', 'b', 'c'], 'in turn')
  t.equal(targets[1]?.requests[0]?.url, '/api/v1/open/1', 'the decided path, as the client sent it')
})

t.test('least_requests: a target busy with a slow request gets no more while the others are idle', async (t) => {
  const targets = await threeTargets(t)
  const [a] = targets as [Target, Target, Target]
  a.delayMs = 1500
  const gw = await startGateway(t, { yaml: upstreamYaml(targets, 'balancing: least_requests') })
  const key = await keyOf(gw)
  // the first request of a fresh pool goes to the first target, which holds it
  const slow = gw.get('/api/v1/open/slow', key)
  await eventually(async () => a.requests.length === 1)
  const bodies: string[] = []
  for (let i = 0; i < 10; i++) bodies.push((await gw.get(`/api/v1/open/${i}`, key)).body)
  t.equal((await slow).status, 200)
  t.same(tally(bodies), { b: 5, c: 5 }, 'the idle targets share the rest, in turn')
  t.equal(a.requests.length, 1, 'the busy target got only its slow request')
})

t.test('a refused connection: an idempotent request is retried on another target, a POST never', async (t) => {
  const targets = await threeTargets(t)
  const [a, b, c] = targets as [Target, Target, Target]
  // no health check, and passive ejection out of reach: b stays in the rotation
  const gw = await startGateway(t, { yaml: upstreamYaml(targets, 'passive: { failures: 1000 }') })
  const key = await keyOf(gw)
  await b.kill()
  const auth = { Authorization: `Bearer ${key}` }

  const gets = []
  for (let i = 0; i < 6; i++) gets.push(await gw.get(`/api/v1/open/get-${i}`, key))
  t.same(gets.map((r) => r.status), [200, 200, 200, 200, 200, 200], 'every GET answered')
  t.same(tally(gets.map((r) => r.body)), { a: 3, c: 3 }, 'by the targets that listen')

  const put = await gw.send('PUT', '/api/v1/open/doc', { ...auth, 'Content-Type': 'text/plain' }, 'the whole body')
  t.equal(put.status, 200, 'a PUT with a body is retried too')
  const received = [...a.requests, ...c.requests].filter((r) => r.method === 'PUT')
  t.same(received, [{ method: 'PUT', url: '/api/v1/open/doc', body: 'the whole body' }], 'once, with its whole body')

  const posts = []
  const text = { ...auth, 'Content-Type': 'text/plain' }
  for (let i = 0; i < 3; i++) posts.push(await gw.send('POST', `/api/v1/open/post-${i}`, text, `post ${i}`))
  const statuses = posts.map((r) => r.status).sort()
  t.same(statuses, [200, 200, 502], 'the POST sent to the dead target is answered 502, not retried')
  const failed = posts.find((r) => r.status === 502)
  t.same(JSON.parse(failed?.body ?? '{}'), BAD_GATEWAY)
  const postsSeen = [...a.requests, ...c.requests].filter((r) => r.method === 'POST').map((r) => r.body).sort()
  t.equal(postsSeen.length, 2, 'the other targets got only the two POSTs meant for them')
  t.equal((await gw.logOf(failed ?? posts[0]!))?.reason, 'upstream_error')
})

t.test('no target up: 502 at once, nothing sent', async (t) => {
  const targets = await threeTargets(t)
  const gw = await startGateway(t, {
    yaml: upstreamYaml(targets, CHECK('100ms', '50ms', 1))
  })
  const key = await keyOf(gw)
  for (const x of targets) x.health = 503
  const all = async (v: number): Promise<boolean> => Object.values(await upStates(gw)).every((x) => x === v)
  t.not(await eventually(async () => await all(0), 5000), -1, 'every target out')
  const res = await gw.get('/api/v1/open/x', key)
  t.equal(res.status, 502)
  t.same(JSON.parse(res.body), BAD_GATEWAY)
  t.same(targets.map((x) => x.requests.length), [0, 0, 0], 'no target got the request')
  const errors = await gw.app.metrics.registry.getSingleMetric('keygate_upstream_errors_total')?.get()
  const noTarget = errors?.values.find((v) => v.labels.upstream === 'core' && v.labels.kind === 'no_target')
  t.equal(noTarget?.value, 1, 'counted as no_target')
  t.ok(gw.logs.some((l) => l.msg === 'upstream target out' && l.why === 'check_failed'), 'each change is logged')

  for (const x of targets) x.health = 200
  t.not(await eventually(async () => await all(1), 5000), -1, 'back after passing checks')
  t.equal((await gw.get('/api/v1/open/x', key)).status, 200)
})

t.test('a target killed under load: no idempotent request fails after the first failure; ' +
  'ejected, then back once it recovers', async (t) => {
  const targets = await threeTargets(t)
  const [, b] = targets as [Target, Target, Target]
  const gw = await startGateway(t, {
    yaml: upstreamYaml(targets, CHECK('200ms', '100ms', 2))
  })
  const key = await keyOf(gw)
  const results: Array<{ start: number, end: number, status: number }> = []
  const load = { running: true }
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; load.running; i++) {
      const start = performance.now()
      const res = await gw.get(`/api/v1/open/${w}-${i}`, key)
      results.push({ start, end: performance.now(), status: res.status })
    }
  }
  const workers = Array.from({ length: 8 }, async (_, w) => { await worker(w) })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const before = b.requests.length
  await b.kill()
  await new Promise((resolve) => setTimeout(resolve, 1500))
  load.running = false
  await Promise.all(workers)

  t.ok(before > 0, 'b served before it was killed')
  const failures = results.filter((r) => r.status !== 200)
  const firstFailure = Math.min(...failures.map((r) => r.end))
  const after = results.filter((r) => r.start > firstFailure)
  t.ok(results.length > 50, `a load (${results.length} requests)`)
  t.ok(failures.length <= 8, `at most the requests in flight on b when it died failed (${failures.length})`)
  t.same(after.filter((r) => r.status !== 200), [], `none of ${after.length} started after the first failure failed`)
  t.equal((await targetsUp(gw.app.metrics.registry, 'core'))[b.url], 0, 'b is out')

  await b.revive()
  t.not(await eventually(async () => (await upStates(gw))[b.url] === 1, 5000), -1, 'b is back once its checks pass')
  const served = b.requests.length
  for (let i = 0; i < 6; i++) t.equal((await gw.get(`/api/v1/open/back-${i}`, key)).status, 200)
  t.ok(b.requests.length > served, 'and takes requests again')
})

t.test('health-check flapping is bounded by the thresholds', async (t) => {
  const targets = await threeTargets(t)
  const [a] = targets as [Target, Target, Target]
  // passes and fails in turn: never two of a kind in a row
  a.health = (n) => n % 2 === 0 ? 500 : 200
  const gw = await startGateway(t, {
    yaml: upstreamYaml(targets, CHECK('300ms', '250ms', 2))
  })
  t.not(await eventually(async () => a.checks >= 8, 8000), -1, 'eight checks')
  const changes = gw.logs.filter((l) => l.msg === 'upstream target out' || l.msg === 'upstream target back')
  t.same(changes, [], 'no change of state')
  t.equal((await targetsUp(gw.app.metrics.registry, 'core'))[a.url], 1, 'still up')
  // two failed checks in a row take it out
  a.health = 500
  t.not(await eventually(async () => (await upStates(gw))[a.url] === 0, 5000), -1, 'out after consecutive failures')
})
