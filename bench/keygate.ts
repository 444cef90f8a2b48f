// keygate as a server under test: one shared redis-server (on the load
// generator's CPU), seeded with a role, a user and the scenario keys, and one
// `keygate serve` child per scenario, pinned like the baseline.
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { generateKey, newKeyId, type NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { waitForRedis } from '@keygate/gateway/dist/registry/redis-client.js'
import { redisKeys } from '@keygate/gateway/dist/registry/redis-keys.js'
import { seedColdKeys } from './cold-keys.js'
import { freePort } from './port.js'
import { nodeCommand, spawnServer, type ChildServer, type Launcher } from './process.js'
import { BENCH_PATH, startOtlpSink } from './servers.js'
import type { RunningServer, ScenarioContext } from './types.js'

/** the product's built CLI, as the bench's `keygate` dependency (the repository root) provides it */
const KEYGATE_CLI = fileURLToPath(import.meta.resolve('@keygate/gateway/dist/cli/main.js'))

/**
 * BENCH_KEYGATE_NODE_OPTIONS: node options of every keygate the bench starts (both builds under BENCH_COMPARE),
 * and of no other server: e.g. the Docker image's `--max-semi-space-size=8`
 */
const KEYGATE_NODE_OPTIONS = process.env['BENCH_KEYGATE_NODE_OPTIONS']

export const PREFIX = 'keygate:bench:'

/** the limited key's limit: the most a limit allows per second, so it never refuses */
export const BENCH_RATE_LIMIT = '999999999/1s'
/** the metered key's quota: more than a run spends, so it never refuses */
export const BENCH_QUOTA = '999999999999/month'

/** Keys known before any server starts, so scenarios can carry them in their headers. */
export const benchKeys = {
  personal: generateKey('kg_'),
  bot: generateKey('kg_'),
  /** a personal key with a rate limit of its own, too high to refuse anything: one limiter call per request */
  limited: generateKey('kg_'),
  metered: generateKey('kg_'),
  /** well-formed, valid checksum, never stored */
  unknown: generateKey('kg_')
}

/**
 * An imported key (docs/imports.md): a Kong-style token (32 hex characters) under a
 * keygate key id, its record's hash the SHA-256 of the whole token, for bench-user.
 */
export const benchImported = { id: newKeyId(), token: randomBytes(16).toString('hex') }

let redis: Promise<{ url: string, server: ChildServer }> | undefined
/** the shared Redis the cold keys were written into, and when */
let coldSeeded: { url: string, done: Promise<void> } | undefined
let users = 0

/** A redis-server of the benchmark's, on the load generator's CPU. */
export async function startBenchRedis (
  ctx: ScenarioContext,
  name = 'redis'
): Promise<{ url: string, server: ChildServer }> {
  const port = await freePort()
  const server = await spawnServer({
    name,
    command: 'redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    env: {},
    cpus: ctx.auxCpus,
    port,
    waitReady: async (signal) => { await waitForRedis(`redis://127.0.0.1:${port}`, { signal }) }
  })
  return { url: `redis://127.0.0.1:${port}`, server }
}

async function sharedRedis (ctx: ScenarioContext): Promise<{ url: string, server: ChildServer }> {
  redis ??= (async () => {
    const started = await startBenchRedis(ctx)
    await seed(started.url)
    return started
  })()
  return await redis
}

/** A key record as the registry holds it (org acme, active). */
export function keyRecord (key: NewKey, fields: Record<string, string>): Record<string, string> {
  return {
    hash: key.hash,
    org: 'acme',
    name: 'bench',
    status: 'active',
    created_at: new Date().toISOString(),
    created_by: 'bench',
    ...fields
  }
}

export async function seed (url: string): Promise<void> {
  const client = new Redis(url)
  const k = redisKeys(PREFIX)
  const importedSha = createHash('sha256').update(benchImported.token).digest('hex')
  await client.multi()
    .hset(k.role('reader'), { permissions: 'users:read' })
    .hset(k.user('bench-user'), { org: 'acme', role: 'reader', status: 'active' })
    .hset(k.key(benchKeys.personal.id), keyRecord(benchKeys.personal, { type: 'personal', user: 'bench-user' }))
    .hset(k.key(benchKeys.bot.id), keyRecord(benchKeys.bot, { type: 'bot', role: 'reader' }))
    .hset(k.key(benchKeys.limited.id), keyRecord(benchKeys.limited, {
      type: 'personal', user: 'bench-user', rate_limit: BENCH_RATE_LIMIT
    }))
    .hset(k.key(benchKeys.metered.id), keyRecord(benchKeys.metered, {
      type: 'personal', user: 'bench-user', quota: BENCH_QUOTA
    }))
    .hset(k.key(benchImported.id), {
      org: 'acme',
      name: 'bench',
      status: 'active',
      created_at: new Date().toISOString(),
      created_by: 'bench',
      type: 'personal',
      user: 'bench-user',
      hash: importedSha,
      imported: 'key'
    })
    .set(k.imported(importedSha), benchImported.id)
    .exec()
  client.disconnect()
}

export interface KeygateOptions {
  /** YAML flow mapping for the upstream `core` (default: `{ url: <the origin> }`) */
  upstream?: string
  /** YAML flow mapping for the `cache` section */
  cache?: string
  /** YAML flow mapping for the `keys` section (`{ accept_imported: true }`) */
  keys?: string
  /** more of the `redis` section, YAML flow mapping entries (`command_timeout_ms: 60000`) */
  redis?: string
  logLevel?: string
  /** `log.allowed_sample_ratio`: the share of passed requests' lines written (docs/operating.md) */
  logSample?: number
  /** `serve --workers N`; such a scenario runs unpinned, on every core */
  workers?: number
  /** a Redis of the caller's instead of the shared one (bench/extras.ts) */
  redisUrl?: string
  /** `redis.prefix` (default PREFIX); a Cluster's must carry a hash tag (bench/scaling.ts) */
  prefix?: string
  /** run unpinned */
  unpinned?: boolean
  /** how long its start may take (default spawnServer's 15 s; a loaded machine needs more) */
  readyTimeoutMs?: number
  /** run under a tool (bench/instructions.ts) */
  launcher?: Launcher
  /** the signed identity assertion on (docs/assertion.md), with a key made for the run */
  assertion?: { bind: 'request' | 'identity', alg?: 'ES256' | 'EdDSA' }
  /** open the authorizer listener too (`authz_listen`, on `authzPort`) */
  authz?: boolean
  /** open the gRPC authorizer too (`authz_grpc_listen`, on `authzGrpcPort`) */
  authzGrpc?: boolean
  /**
   * export spans (docs/tracing.md) to a stand-in collector of its own (bench/otlp-sink.ts), sampling this share, in
   * this encoding (`tracing.protocol`; unset: the product's default, and a build without the field runs too)
   */
  tracing?: { sampleRatio: number, protocol?: 'http/protobuf' | 'http/json' }
  /** the cold keys (bench/cold-keys.ts) written into the shared Redis first */
  coldKeys?: boolean
  /** the `usage` section (docs/usage.md): per-key counting, on by default as in the product */
  usage?: { enabled?: boolean, flushMs?: number, maxKeys?: number }
  /** the per-key request log (`request_log.enabled`, docs/request-log.md): on by default as in the product */
  requestLog?: boolean
  /** webhooks.enabled (default on, as the headline runs); off: no dispatcher in the process */
  webhooks?: boolean
  /** a second route, `STRIP_PREFIX` with `strip_prefix: true` (docs/routing.md), its rule for BENCH_PATH under it */
  stripPrefix?: boolean
  /**
   * `shadow_rules` of this many rules (docs/safe-change.md): one for BENCH_PATH that agrees with the live rule (the
   * shadow decision runs on every request and notes nothing), the others for paths the bench never asks
   */
  shadowRules?: number
}

/**
 * The prefix of the strip_prefix row: `/strip/api/v1/users` reaches the origin as BENCH_PATH, as the headline's
 * request does.
 */
export const STRIP_PREFIX = '/strip'

/** the per-key request log off (its rows: on against off) */
const KEY_LOG_OFF = 'request_log: { enabled: false }\n'

/** The `usage` section for the config file ('' when the row leaves the defaults). */
function webhooksSection (on: boolean | undefined): string {
  return on === undefined ? '' : `webhooks: { enabled: ${String(on)} }\n`
}

function usageSection (o: KeygateOptions['usage']): string {
  if (o === undefined) return ''
  const fields = [
    o.enabled === undefined ? '' : `enabled: ${String(o.enabled)}`,
    o.flushMs === undefined ? '' : `flush_ms: ${o.flushMs}`,
    o.maxKeys === undefined ? '' : `max_keys: ${o.maxKeys}`
  ].filter((f) => f !== '')
  return `usage: { ${fields.join(', ')} }\n`
}

/** The log section's `allowed_sample_ratio` entry, when the row sets one. */
function logSample (ratio: number | undefined): string {
  return ratio === undefined ? '' : `, allowed_sample_ratio: ${ratio}`
}

/**
 * The cache section: the row's settings, and `warm_up: false` unless the row sets it.
 * The rows measure a steady state; at start, a gateway's warm-up would read into its
 * cache every key the shared Redis's usage hash lists (after the cold-keys row, 100,000
 * of them) while the round is measured. The warm-up is measured on its own (warm-up.ts).
 */
function benchCache (cache: string | undefined): string {
  const inner = (cache ?? '{}').trim().replace(/^\{|\}$/g, '').trim()
  if (inner.includes('warm_up')) return `{ ${inner} }`
  return inner === '' ? '{ warm_up: false }' : `{ ${inner}, warm_up: false }`
}

/** identity.assertion for the config file, and its key file (written into `dir`). */
function assertionSetup (dir: string, o: KeygateOptions['assertion']): { yaml: string, env: Record<string, string> } {
  if (o === undefined) return { yaml: '', env: {} }
  const file = join(dir, 'assertion.pem')
  const { privateKey } = o.alg === 'EdDSA'
    ? generateKeyPairSync('ed25519')
    : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  return {
    yaml: `identity: { assertion: { enabled: true, bind: ${o.bind} } }\n`,
    env: { KEYGATE_ASSERTION_KEY_FILE: file }
  }
}

export interface KeygateServer extends RunningServer {
  adminPort: number
  /** the authorizer listener's port, with `authz` */
  authzPort: number | undefined
  /** the gRPC authorizer's port, with `authzGrpc` */
  authzGrpcPort: number | undefined
}

/** `keygate_cache_misses_total` of a gateway, from its admin listener's /metrics. */
export async function cacheMissesOf (adminPort: number): Promise<number> {
  const scrape = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text()
  const misses = Number(/^keygate_cache_misses_total(?:\{[^}]*\})? ([0-9.e+]+)/m.exec(scrape)?.[1])
  if (!Number.isFinite(misses)) throw new Error('no keygate_cache_misses_total in /metrics')
  return misses
}

/** Writes the cold keys into the shared Redis, once per Redis. */
async function seedCold (url: string): Promise<void> {
  if (coldSeeded?.url !== url) {
    coldSeeded = {
      url,
      done: (async () => {
        const client = new Redis(url)
        try {
          await seedColdKeys(client, PREFIX, keyRecord)
        } finally {
          client.disconnect()
        }
      })()
    }
  }
  await coldSeeded.done
}

/**
 * What a Redis has run for the registry so far. `scripts`: the registry's Lua script
 * calls (EVAL and EVALSHA), one round trip each; the cache misses of one event-loop turn
 * share one (src/registry/registry-reader.ts), and a rate limit, a usage flush or a
 * request-log write (up to 500 keys) is one too. `records`: the records those scripts
 * read, one HMGET each (INFO commandstats counts a script's own commands): a key's
 * record, then its user's, role's and org's, so an unknown key is exactly one.
 */
export interface RegistryCalls { scripts: number, records: number }

/** The registry's calls on the shared Redis so far, across every gateway. */
export async function registryCalls (): Promise<RegistryCalls> {
  if (redis === undefined) return { scripts: 0, records: 0 }
  const client = new Redis((await redis).url)
  try {
    return await registryCallsOf(client)
  } finally {
    client.disconnect()
  }
}

export async function registryCallsOf (client: Redis): Promise<RegistryCalls> {
  const info = await client.info('commandstats')
  const calls = { scripts: 0, records: 0 }
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|hmget):calls=(\d+)/gm)) {
    if (m[1] === 'hmget') calls.records += Number(m[2])
    else calls.scripts += Number(m[2])
  }
  return calls
}

/** The calls from `before` to `after`. */
export function callsSince (before: RegistryCalls, after: RegistryCalls): RegistryCalls {
  return { scripts: after.scripts - before.scripts, records: after.records - before.records }
}

export async function startKeygate (
  ctx: ScenarioContext,
  name: string,
  o: KeygateOptions = {}
): Promise<KeygateServer> {
  const shared = o.redisUrl === undefined ? await sharedRedis(ctx) : undefined
  const url = o.redisUrl ?? shared?.url ?? ''
  if (shared !== undefined) users++
  if (o.coldKeys === true) await seedCold(url)
  const dir = mkdtempSync(join(tmpdir(), 'keygate-bench-'))
  const config = join(dir, 'keygate.yaml')
  const assertion = assertionSetup(dir, o.assertion)
  const sink = o.tracing === undefined ? undefined : await startOtlpSink(ctx.distDir, ctx.auxCpus)
  const tracing = o.tracing === undefined || sink === undefined
    ? ''
    : `tracing: { otlp_endpoint: "http://127.0.0.1:${sink.port}/v1/traces", ` +
      `sample_ratio: ${o.tracing.sampleRatio}` +
      `${o.tracing.protocol === undefined ? '' : `, protocol: ${o.tracing.protocol}`} }\n`
  const strip = o.stripPrefix === true
  const stripRoute = strip ? `  - { prefix: ${STRIP_PREFIX}, upstream: core, strip_prefix: true }\n` : ''
  const stripRule = strip ? `  - { method: GET, path: ${STRIP_PREFIX}${BENCH_PATH}, permissions: [users:read] }\n` : ''
  const features = `${usageSection(o.usage)}${webhooksSection(o.webhooks)}${shadowSection(o.shadowRules)}` +
    (o.requestLog === false ? KEY_LOG_OFF : '')
  writeFileSync(config, `
redis: { prefix: "${o.prefix ?? PREFIX}"${o.redis === undefined ? '' : `, ${o.redis}`} }
upstreams:
  core: ${o.upstream ?? `{ url: "${ctx.originUrl}" }`}
routes:
  - { prefix: /api/v1, upstream: core }
${stripRoute}rules:
  - { method: GET, path: ${BENCH_PATH}, permissions: [users:read] }
${stripRule}cache: ${benchCache(o.cache)}
${o.keys === undefined ? '' : `keys: ${o.keys}\n`}log: { level: ${o.logLevel ?? 'info'}${logSample(o.logSample)} }
${assertion.yaml}${tracing}${features}`)
  const port = await freePort()
  const adminPort = await freePort()
  const authzPort = o.authz === true ? await freePort() : undefined
  const authzGrpcPort = o.authzGrpc === true ? await freePort() : undefined
  const gateway = await spawnServer({
    name,
    ...nodeCommand(
      [ctx.keygateCli ?? KEYGATE_CLI, 'serve', ...(o.workers === undefined ? [] : ['--workers', String(o.workers)])],
      o.launcher
    ),
    env: {
      KEYGATE_CONFIG: config,
      KEYGATE_REDIS_URL: url,
      KEYGATE_LISTEN: `127.0.0.1:${port}`,
      KEYGATE_ADMIN_LISTEN: `127.0.0.1:${adminPort}`,
      ...(KEYGATE_NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS: KEYGATE_NODE_OPTIONS }),
      ...assertion.env,
      ...(authzPort === undefined ? {} : { KEYGATE_AUTHZ_LISTEN: `127.0.0.1:${authzPort}` }),
      ...(authzGrpcPort === undefined ? {} : { KEYGATE_AUTHZ_GRPC_LISTEN: `127.0.0.1:${authzGrpcPort}` })
    },
    cpus: o.workers === undefined && o.unpinned !== true ? ctx.serverCpus : undefined,
    port,
    readyUrl: `http://127.0.0.1:${adminPort}/readyz`,
    isReady: (status) => status === 200,
    ...(o.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: o.readyTimeoutMs })
  })
  return {
    port: gateway.port,
    adminPort,
    authzPort,
    authzGrpcPort,
    pid: gateway.pid,
    cacheMisses: async () => await cacheMissesOf(adminPort),
    async stop () {
      await gateway.stop()
      await sink?.stop()
      if (shared !== undefined && --users === 0) {
        // the last gateway on the shared Redis: a later one starts (and seeds) a new Redis
        redis = undefined
        await shared.server.stop()
      }
    }
  }
}

/**
 * The extras' registry (memory, warm-up): `count` personal keys of 1,000 users and 10
 * roles, written with pipelined HSETs; with `usedAt`, each key also in the usage hash
 * (what the warm-up reads). Returns the keys, in the order written.
 */
export async function seedPersonalKeys (client: Redis, count: number, usedAt?: string): Promise<NewKey[]> {
  const k = redisKeys(PREFIX)
  const keys: NewKey[] = []
  let batch = client.pipeline()
  for (let r = 0; r < 10; r++) batch.hset(k.role(`role${r}`), { permissions: 'users:read orgs:read' })
  for (let u = 0; u < 1000; u++) {
    batch.hset(k.user(`user${u}`), { org: 'acme', role: `role${u % 10}`, status: 'active' })
  }
  for (let i = 0; i < count; i++) {
    const key = generateKey('kg_')
    keys.push(key)
    batch.hset(k.key(key.id), keyRecord(key, { type: 'personal', user: `user${i % 1000}` }))
    if (usedAt !== undefined) batch.hset(k.usage, key.id, usedAt)
    if (batch.length >= 10_000) {
      await batch.exec()
      batch = client.pipeline()
    }
  }
  await batch.exec()
  return keys
}

/** `shadow_rules` of `n` rules: BENCH_PATH's, as the live rule asks, and n - 1 others the bench never asks */
function shadowSection (n: number | undefined): string {
  if (n === undefined || n === 0) return ''
  const others = Array.from({ length: n - 1 }, (_v, i) =>
    `  - { method: GET, path: /api/v1/shadow-${i}/:id, permissions: [users:admin] }\n`)
  return `shadow_rules:\n  - { method: GET, path: ${BENCH_PATH}, permissions: [users:read] }\n${others.join('')}`
}
