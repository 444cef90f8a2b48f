/**
 * Usage counting on a real Redis Cluster (three masters, `redis+cluster://`, the
 * hash-tagged prefix a Cluster registry needs): requests of known outcomes on keys of
 * three orgs, and after one flush interval the usage endpoints report exactly them, per
 * key and per org, by the minute, the hour and the day:
 *
 *   key                 org      requests                          allowed refused limited
 *   alice (personal)    acme     4 GET users, 1 POST users (403)   4       1       0
 *   alice's second key  acme     2 GET users                       2       0       0
 *   limited bot (2/1m)  acme     3 GET users (200 200 429)         2       0       1
 *   carol (personal)    globex   3 GET orgs/globex, 2 GET users    3       2       0
 *   globex bot          globex   1 GET users                       1       0       0
 *   initech bot         initech  5 GET users                       5       0       0
 *
 * The request log holds each key's decisions too, written by its own script.
 *
 * Every usage hash is in the registry's slot (the prefix's tag comes first), and a write
 * of 1,000 keys takes three script calls (500 keys a call, and the orgs), as on one Redis.
 */
import t from 'tap'
import { Fixtures } from '../../helpers/fixtures.js'
import { adminCall, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { startRedisCluster } from '../../helpers/redis-cluster.js'
import { asTestRedis } from '../../helpers/redis-node.js'
import { uniquePrefix } from '../../helpers/redis.js'
import { withClient } from '../../helpers/redis-sentinel.js'
import { cliClient, redisSection } from '../../helpers/topology.js'
import { isCluster } from '../../../src/registry/redis-client.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { UsageCounter } from '../../../src/usage/counter.js'
import { readUsage } from '../../../src/usage/reader.js'

const TOKEN = 'usage-cluster-admin-token-0123456789'
const FLUSH_MS = 200
interface Totals { allowed: number, refused: number, limited: number, errors: number }
interface Point extends Totals { t: string }

function sum (points: Point[]): Totals {
  const s = { allowed: 0, refused: 0, limited: 0, errors: 0 }
  for (const p of points) { s.allowed += p.allowed; s.refused += p.refused; s.limited += p.limited; s.errors += p.errors }
  return s
}

t.test('on a Cluster, the usage endpoints report exactly the requests made, per key and per org', async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3 })
  const prefix = `{${uniquePrefix().slice(0, -1).replace(/:/g, '-')}}:`
  const [first] = cluster.nodes
  const gw: TestGateway = await startGateway(t, {
    redis: asTestRedis(first as NonNullable<typeof first>), // (the helper's own plain client; unused here)
    prefix,
    seed: false,
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    yaml: `usage: { flush_ms: ${FLUSH_MS} }\nrequest_log: { flush_ms: ${FLUSH_MS} }`,
    configure: (c) => { c.redis = redisSection(cluster.url, prefix) }
  })
  t.ok(isCluster(gw.app.redis), 'the gateway holds an ioredis Cluster')
  const fx = new Fixtures(cliClient(t, gw), prefix, gw.config.keys.prefix)
  await fx.standardWorld()
  await fx.user('ivan', 'initech', 'reader')
  const alice = await fx.personalKey('alice')
  const alice2 = await fx.personalKey('alice')
  const { result: limited } = await fx.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', rateLimit: '2/1m' })
  const carol = await fx.personalKey('carol')
  const globexBot = await fx.botKey('reader', 'globex')
  const initechBot = await fx.botKey('reader', 'initech')
  const start = Date.now()

  const plan: Array<[string, string, string, number, number]> = [
    // key, method, path, times, status
    [alice.key, 'GET', '/api/v1/users', 4, 200],
    [alice.key, 'POST', '/api/v1/users', 1, 403],
    [alice2.key, 'GET', '/api/v1/users', 2, 200],
    [limited.key, 'GET', '/api/v1/users', 2, 200],
    [limited.key, 'GET', '/api/v1/users', 1, 429],
    [carol.key, 'GET', '/api/v1/orgs/globex/projects', 3, 200],
    [carol.key, 'GET', '/api/v1/users', 2, 403],
    [globexBot.key, 'GET', '/api/v1/users', 1, 200],
    [initechBot.key, 'GET', '/api/v1/users', 5, 200]
  ]
  for (const [key, method, path, times, status] of plan) {
    for (let i = 0; i < times; i++) {
      const res = await gw.send(method, path, { Authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'Content-Length': '0' } : {}) })
      t.equal(res.status, status, `${method} ${path}: ${status}`)
    }
  }
  // one flush interval, and then some (a write on a loaded machine)
  await new Promise((resolve) => setTimeout(resolve, FLUSH_MS * 3))

  const from = new Date(start - 120_000).toISOString()
  const to = new Date(Date.now() + 60_000).toISOString()
  const read = async (path: string, step: string): Promise<Totals> => {
    const res = await adminCall(gw, 'GET', `${path}?from=${from}&to=${to}&step=${step}`, TOKEN)
    t.equal(res.status, 200, `${path} ${step}: 200`)
    return sum(res.status === 200 ? (res.json() as { points: Point[] }).points : [])
  }
  const expected: Array<[string, Totals]> = [
    [`/admin/v1/keys/${alice.id}/usage`, { allowed: 4, refused: 1, limited: 0, errors: 0 }],
    [`/admin/v1/keys/${alice2.id}/usage`, { allowed: 2, refused: 0, limited: 0, errors: 0 }],
    [`/admin/v1/keys/${limited.id}/usage`, { allowed: 2, refused: 0, limited: 1, errors: 0 }],
    [`/admin/v1/keys/${carol.id}/usage`, { allowed: 3, refused: 2, limited: 0, errors: 0 }],
    [`/admin/v1/keys/${globexBot.id}/usage`, { allowed: 1, refused: 0, limited: 0, errors: 0 }],
    [`/admin/v1/keys/${initechBot.id}/usage`, { allowed: 5, refused: 0, limited: 0, errors: 0 }],
    ['/admin/v1/orgs/acme/usage', { allowed: 8, refused: 1, limited: 1, errors: 0 }],
    ['/admin/v1/orgs/globex/usage', { allowed: 4, refused: 2, limited: 0, errors: 0 }],
    ['/admin/v1/orgs/initech/usage', { allowed: 5, refused: 0, limited: 0, errors: 0 }]
  ]
  for (const [path, totals] of expected) {
    for (const step of ['1m', '1h', '1d']) t.same(await read(path, step), totals, `${path}, step ${step}: exactly the requests made`)
  }

  // the request log, written by its own script on the Cluster: each key's decisions, newest first
  const logged = async (id: string): Promise<Array<[string, number]>> => {
    const res = await adminCall(gw, 'GET', `/admin/v1/keys/${id}/requests`, TOKEN)
    t.equal(res.status, 200, `${id}'s requests: 200`)
    return res.status === 200
      ? (res.json() as { requests: Array<{ method: string, status: number }> }).requests.map((r) => [r.method, r.status])
      : []
  }
  t.same(await logged(alice.id), [['POST', 403], ['GET', 200], ['GET', 200], ['GET', 200], ['GET', 200]],
    'alice\'s five decisions in the request log, newest first')
  t.same(await logged(limited.id), [['GET', 429], ['GET', 200], ['GET', 200]], 'the limited key\'s three')

  // where they are: the registry's slot, on one master
  const owner = await cluster.masterOf(`${prefix}key:${alice.id}`)
  for (const n of cluster.nodes) {
    const hashes = await withClient(n.port, async (c) => await c.keys(`${prefix}usage*`))
    if (n.port === owner.port) t.ok(hashes.length >= 2 * (6 + 3), `the registry slot's master holds them (${hashes.length} hashes)`)
    else t.same(hashes, [], `another master (${n.port}) holds none`)
  }
  t.ok(gw.logs.every((l) => l.msg !== 'usage: counts cannot be written and are dropped'), 'no write failed')
  t.match((await gw.admin('GET', '/metrics')).body, /^keygate_usage_flush_errors_total 0$/m, 'no write failed (metrics)')

  // A write of 1,000 keys of 3 orgs, with the Cluster client the gateway uses: script
  // calls of 500 keys each, as on one Redis (their hashes share the prefix's slot)
  const client = cliClient(t, gw)
  const counter = new UsageCounter(client, redisKeys(prefix), { flushMs: 5000, retentionMs: 86_400_000 })
  t.teardown(async () => { await counter.stop() })
  const now = Date.now()
  const orgs = ['acme', 'globex', 'initech']
  for (let i = 0; i < 1000; i++) counter.count(`k${String(i).padStart(15, '0')}`, orgs[i % 3], 200, 'allowed', now)
  const before = await scriptCalls(cluster.nodes.map((n) => n.port))
  await counter.flush()
  t.equal(await scriptCalls(cluster.nodes.map((n) => n.port)) - before, 3, 'three script calls: two of 500 keys, one of the three orgs')
  const points = await readUsage(client, redisKeys(prefix), { key: 'k000000000000999' }, { from: now, to: now + 1, step: '1m' })
  t.same(points.map((p) => p.allowed), [1], 'a key of the last call is written')
})

/** EVAL and EVALSHA calls every node has run */
async function scriptCalls (ports: number[]): Promise<number> {
  let n = 0
  for (const port of ports) {
    const stats = await withClient(port, async (c) => await c.info('commandstats'))
    for (const m of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) n += Number(m[1])
  }
  return n
}
