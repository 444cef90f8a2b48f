// The cost of each of keygate's own pipeline stages, in isolation, in-process:
// `node bench/dist/stages.js` (pin it with `taskset -c 1` for steadier numbers).
// The end-to-end comparison with a plain proxy is bench/run.ts; this says how much
// of keygate's cost is keygate's own code.
import { randomUUID } from 'node:crypto'
import { cacheName, RecordCache } from '@keygate/gateway/dist/cache/record-cache.js'
import { authenticate } from '@keygate/gateway/dist/decision/decide.js'
import { authorize } from '@keygate/gateway/dist/decision/stages/authorize.js'
import type { Identity } from '@keygate/gateway/dist/decision/identity.js'
import { extractCredential } from '@keygate/gateway/dist/decision/extract-credential.js'
import { createHeaderRewriter } from '@keygate/gateway/dist/http/identity-headers.js'
import { compileRules } from '@keygate/gateway/dist/decision/match-rule.js'
import { PROXIED_METHODS } from '@keygate/gateway/dist/http/methods.js'
import { createMetrics } from '@keygate/gateway/dist/metrics/metrics.js'
import { checkTarget } from '@keygate/gateway/dist/decision/target-policy.js'
import { generateKey, parseKey, secretMatches } from '@keygate/gateway/dist/registry/key-format.js'
import { INVALID, parseKeyRecord, parseRoleRecord, parseUserRecord } from '@keygate/gateway/dist/registry/records.js'
import type { FastifyRequest } from 'fastify'

const k = generateKey('kg_')
const parsed = parseKey(k.key, 'kg_')
const key = parseKeyRecord({
  type: 'personal',
  hash: k.hash,
  org: 'acme',
  user: 'alice',
  status: 'active',
  name: 'bench'
})
const user = parseUserRecord({ org: 'acme', role: 'reader', status: 'active' })
const role = parseRoleRecord({ permissions: 'users:read' })
if (typeof parsed === 'string' || key === INVALID || user === INVALID) throw new Error('fixture')
const records = { key, user, roleName: 'reader', role }
const who = authenticate(parsed, records, Date.now())
if (!who.ok) throw new Error('fixture')
const identity: Identity = who.identity

const rawHeaders = [
  'Host',
  'localhost:8080',
  'Authorization',
  `Bearer ${k.key}`,
  'Connection',
  'keep-alive',
  'User-Agent',
  'autocannon'
]
const match = compileRules([
  { method: 'GET', path: '/api/v1/users', permissions: ['users:read'] },
  { method: '*', path: '/api/v1/orgs/:org/*', permissions: ['orgs:read'], org_param: 'org' }
], PROXIED_METHODS)
const cache = new RecordCache(100_000)
cache.set(cacheName.key(parsed.id), key, Date.now(), true)
cache.set(cacheName.user('alice'), user, Date.now(), true)
cache.set(cacheName.role('reader'), role, Date.now(), true)
const rewrite = createHeaderRewriter({ prefix: 'X-Auth-', forwardAuthorization: false, trustedProxies: [] })
const request = {
  raw: { socket: { remoteAddress: '::ffff:127.0.0.1' } },
  kg: { identity },
  id: randomUUID(),
  protocol: 'http',
  headers: { host: 'localhost:8080' }
} as unknown as FastifyRequest
// what the metrics add to a proxied request whose records are cached (src/metrics/)
const metrics = createMetrics({
  rules: [{ method: 'GET', path: '/api/v1/users' }],
  upstreams: ['core'],
  redis: { up: true, lastOkAt: Date.now() },
  defaultMetrics: false
})
const core = metrics.upstream('core')
const timing = { upstreamSentAt: 0 }
const upstreamHeaders = { host: '127.0.0.1:3000', authorization: `Bearer ${k.key}`, 'user-agent': 'autocannon' }

const stages: Array<[string, () => unknown]> = [
  ['1 target policy', () => checkTarget('/api/v1/users')],
  ['2 extract credential', () => extractCredential(rawHeaders)],
  ['3 key format + checksum', () => parseKey(k.key, 'kg_')],
  ['4 cache lookups (key, user, role)', () => [cache.key(parsed.id), cache.user('alice'), cache.role('reader')]],
  ['5 secret check (SHA-256, constant time)', () => secretMatches(parsed.secret, key.digest)],
  ['6 authenticate (incl. secret check)', () => authenticate(parsed, records, Date.now())],
  ['7 match rule + authorize', () => authorize(identity, match('GET', '/api/v1/users'))],
  ['8 upstream request headers', () => rewrite(request, upstreamHeaders)],
  [
    '9 request log line (JSON.stringify)',
    () =>
      JSON.stringify({
        level: 30,
        time: Date.now(),
        pid: 1,
        req_id: request.id,
        method: 'GET',
        path: '/api/v1/users',
        status: 200,
        key_id: parsed.id,
        reason: 'allowed',
        rule: 0,
        latency_ms: 1.234,
        msg: 'request'
      })
  ],
  ['10 metrics (2 clock reads, 3 records)', () => {
    metrics.auth.fromCache()
    timing.upstreamSentAt = performance.now()
    core.response(performance.now() - timing.upstreamSentAt)
    metrics.requests.response(0, 200, 'allowed', 1.234)
  }]
]

let total = 0
for (const [name, fn] of stages) {
  for (let i = 0; i < 20_000; i++) fn()
  const n = 200_000
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) fn()
  const us = Number(process.hrtime.bigint() - start) / n / 1000
  if (!name.startsWith('5')) total += us
  process.stdout.write(`${name.padEnd(42)} ${us.toFixed(3)} us\n`)
}
process.stdout.write(`${'all stages (5 is inside 6)'.padEnd(42)} ${total.toFixed(3)} us\n`)
