// The scenarios measured by bench/run.ts. The first one is the baseline every
// other row is compared with, unless the row names its own reference (compareWith);
// keygate rows come from keygateScenarios(), the authorizer's from authorizerScenarios().
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { coldKeyCount, coldKeys, nextColdAuthorization } from './cold-keys.js'
import { FORGED_IDS, nextForgedForeignToken, nextForgedKey } from './forged-keys.js'
import {
  BENCH_RATE_LIMIT,
  BENCH_QUOTA,
  benchImported,
  benchKeys,
  PREFIX,
  seed,
  startBenchRedis,
  startKeygate,
  STRIP_PREFIX,
  type KeygateOptions
} from './keygate.js'
import { startNginx } from './nginx.js'
import { startNginxLua } from './nginx-lua.js'
import type { ChildServer } from './process.js'
import { BENCH_PATH, startBaseline, startHello } from './servers.js'
import type { RunningServer, Scenario, ScenarioContext } from './types.js'

/** keygate's own proxy, the headline row: what its feature rows and nginx + Lua are compared with */
export const KEYGATE_PROXY = 'keygate: personal key, cache warm'
/** Kong's architecture, the bar of the nginx rows: the key check in nginx's own Lua, cached in a shared dict */
const NGINX_LUA = 'nginx + Lua auth: personal key, lua_shared_dict cache in front of Redis (Kong\'s architecture)'
/** the headline row with per-key usage counting off: what the same row with counting on is compared with */
export const KEYGATE_NO_USAGE = 'keygate: personal key, cache warm, usage counting off'
/** the headline without the per-key request log: what the row with it is compared with */
export const KEYGATE_NO_KEY_LOG =
  'keygate: personal key, cache warm, per-key request log off (request_log.enabled: false)'
/** the headline row with the webhook dispatcher off: what the same row with it on is compared with */
export const KEYGATE_NO_WEBHOOKS = 'keygate: personal key, cache warm, webhooks off'
/** the log-sampled rows' `log.allowed_sample_ratio` */
const LOG_SAMPLE = 0.01
/** the cached decision, what the assertion's decision rows are compared with */
export const AUTHZ_CACHED = 'authz: personal key, cache warm (Traefik shape, 200 decision)'
/** the reference of the decision rows */
export const HELLO = 'hello-world: plain fastify, 200 with an empty body, no auth (the decision rows\' reference)'

/** the baseline: the lean Node proxy (bench/lean-proxy.ts), the floor under any Node gateway */
export function baselineScenario (ctx: ScenarioContext): Scenario {
  return {
    name: 'baseline: node:http + undici Pool.stream, the lean Node proxy (no framework, no auth, no log)',
    start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus),
    headers: {}
  }
}

/**
 * The baseline again, as a second server: its ratio to the baseline would be 1.00× on
 * a quiet machine, so how far it strays is this run's noise floor (an A/A test).
 */
export function controlScenario (ctx: ScenarioContext): Scenario {
  return {
    name: 'control: the same lean proxy again (A/A: its distance from 1.00× is the noise)',
    start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus),
    headers: {}
  }
}

/**
 * The fastify proxy: fastify 5 + @fastify/http-proxy, no auth. What a fastify gateway
 * costs before any work of its own: keygate's distance from it beside its distance from
 * the lean floor shows how much of keygate's cost is the framework's.
 */
export function fastifyProxyScenario (ctx: ScenarioContext): Scenario {
  return {
    name: 'reference: fastify + @fastify/http-proxy (no auth)',
    start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus, undefined, 'http-proxy'),
    headers: {}
  }
}

/**
 * The reference row: fastify + @fastify/reply-from, no auth. keygate proxies with
 * reply-from directly (src/data-plane/proxy.ts), so keygate's ratio divided by this row's
 * is the cost of authentication, headers and the log alone, apart from what keygate
 * saves by not running @fastify/http-proxy's route handler.
 */
export function referenceScenario (ctx: ScenarioContext): Scenario {
  return {
    name: 'reference: fastify + @fastify/reply-from (no auth; http-proxy\'s engine)',
    start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus, undefined, 'reply-from'),
    headers: {}
  }
}

/**
 * The command timeout of the rows that call Redis on every request (a rate limit, a quota).
 * On a loaded machine the gateway's process is descheduled for longer than the default
 * 500 ms: Node runs its expired timers before it reads the reply waiting on the socket,
 * so the command times out although Redis answered. The quota's `on_error: deny` turns
 * that into a 503 (the rate limit's `allow` into an unlimited request, silently cheaper),
 * neither of which is what these rows measure.
 */
export const REDIS_ROW_TIMEOUT = 'command_timeout_ms: 10000'

/** The "3 targets" row's upstream: the origin stub's three listeners, balanced round robin */
export function threeTargets (ctx: ScenarioContext): string {
  return `{ targets: [${(ctx.originTargets ?? [ctx.originUrl]).map((u) => `"${u}"`).join(', ')}] }`
}

/**
 * keygate rows: valid keys with the cache warm (the headline), the same with the
 * the headline's settings with the upstream as three targets balanced round robin
 * (three listeners of the one origin stub; against the headline: what the pool's choice
 * of target costs a request; target >= 0.98), the cache disabled (one Redis round trip
 * per request), a flood of malformed keys
 * (refused locally, no Redis), a flood of forged well-formed keys (a new id every
 * request, valid checksums: the per-peer unknown-key limit keeps Redis out), the same
 * with forged foreign-format tokens and `keys.accept_imported` on, an imported key with
 * the cache warm (against the headline: decided like a native key, no Redis), a key
 * under a rate limit and one under a quota (a Lua call per turn of the event loop; each
 * against the same key under neither, usage counting off in all three: what exactness
 * with Redis costs a request; the cache-warm rows are keys under no limit, which cost
 * no Redis command), the headline with per-key usage
 * counting off and again with it on, compared with the former (counting on / counting
 * off: what counting costs a request; target >= 0.98), and the headline again with two
 * worker processes (unpinned: it needs both cores).
 */
export function keygateScenarios (ctx: ScenarioContext): Scenario[] {
  const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` })
  return [
    {
      name: KEYGATE_PROXY,
      label: 'keygate proxy',
      start: async () => await startKeygate(ctx, 'keygate-cached'),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.85 }
    },
    {
      // the headline with the upstream as three targets of the same origin stub, balanced round robin
      name: 'keygate: personal key, cache warm, 3 targets (round robin)',
      label: '3 targets',
      compareWith: KEYGATE_PROXY,
      start: async () => await startKeygate(ctx, 'keygate-targets', {
        upstream: threeTargets(ctx)
      }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.98 }
    },
    {
      name: 'keygate: BOT key, cache warm',
      start: async () => await startKeygate(ctx, 'keygate-bot'),
      headers: bearer(benchKeys.bot.key)
    },
    {
      name: 'keygate: personal key, cache warm, request log off',
      start: async () => await startKeygate(ctx, 'keygate-nolog', { logLevel: 'silent' }),
      headers: bearer(benchKeys.personal.key)
    },
    // an operator's setting: one allowed request's line in a hundred (every refusal's still written)
    {
      name: `keygate: personal key, cache warm, log sampled (log.allowed_sample_ratio: ${LOG_SAMPLE})`,
      label: 'log sampled',
      compareWith: KEYGATE_PROXY,
      start: async () => await startKeygate(ctx, 'keygate-log-sampled', { logSample: LOG_SAMPLE }),
      headers: bearer(benchKeys.personal.key)
    },
    {
      name: `keygate: personal key with a rate limit (${BENCH_RATE_LIMIT}), cache warm: one Lua call per request`,
      // usage counting off: its writes are EVALSHAs too, and Redis counts them with the reads.
      // The command timeout (REDIS_ROW_TIMEOUT) as for the metered row
      start: async () => await startKeygate(ctx, 'keygate-limited', {
        usage: { enabled: false }, redis: REDIS_ROW_TIMEOUT
      }),
      headers: bearer(benchKeys.limited.key),
      maxScriptsPer1k: 1001,
      // against an unmetered, unlimited cached key with the same settings (usage counting off)
      compareWith: KEYGATE_NO_USAGE,
      target: { cpuRatio: 0.75 }
    },
    {
      name: `keygate: personal key with a quota (${BENCH_QUOTA}), cache warm: one Lua call per turn, batched`,
      // usage counting off, as for the rate limit: its writes are EVALSHAs too. A timed-out script call is
      // quota.on_error's (deny: 503), so the command timeout is REDIS_ROW_TIMEOUT
      start: async () => await startKeygate(ctx, 'keygate-metered', {
        usage: { enabled: false }, redis: REDIS_ROW_TIMEOUT
      }),
      headers: bearer(benchKeys.metered.key),
      maxScriptsPer1k: 1001,
      compareWith: KEYGATE_NO_USAGE,
      target: { cpuRatio: 0.75 }
    },
    // a route that strips its prefix (docs/routing.md), against the headline: the same
    // request reaches the origin, through a second route and the rewrite
    {
      name: `keygate: personal key, cache warm, strip_prefix (${STRIP_PREFIX}${BENCH_PATH} forwarded as ${BENCH_PATH})`,
      compareWith: KEYGATE_PROXY,
      start: async () => await startKeygate(ctx, 'keygate-strip-prefix', { stripPrefix: true }),
      headers: bearer(benchKeys.personal.key),
      path: `${STRIP_PREFIX}${BENCH_PATH}`,
      target: { cpuRatio: 0.98 }
    },
    // ten shadow rules (docs/safe-change.md), against the headline: decided beside the live rules on
    // every request (they agree, so nothing is noted); without shadow rules the decision pays one comparison
    {
      name: 'keygate: personal key, cache warm, 10 shadow rules',
      label: '10 shadow rules',
      compareWith: KEYGATE_PROXY,
      start: async () => await startKeygate(ctx, 'keygate-shadow-rules', { shadowRules: 10 }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.95 }
    },
    // the signed identity assertion (docs/assertion.md), against the same row without it
    {
      name: 'keygate: personal key, cache warm, assertion bind: identity (ES256)',
      compareWith: KEYGATE_PROXY,
      start: async () =>
        await startKeygate(ctx, 'keygate-assert-identity', { assertion: { bind: 'identity', alg: 'ES256' } }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.95 }
    },
    {
      name: 'keygate: personal key, cache warm, assertion bind: request (ES256)',
      compareWith: KEYGATE_PROXY,
      start: async () =>
        await startKeygate(ctx, 'keygate-assert-request', { assertion: { bind: 'request', alg: 'ES256' } }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.75 }
    },
    {
      name: 'keygate: personal key, cache warm, assertion bind: request (EdDSA)',
      compareWith: KEYGATE_PROXY,
      start: async () =>
        await startKeygate(ctx, 'keygate-assert-request-eddsa', { assertion: { bind: 'request', alg: 'EdDSA' } }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.75 }
    },
    // per-key usage counting (docs/usage.md): on in the headline row and by default; here
    // off, and on again in the same rounds, compared with off (the ratio is on / off)
    {
      name: KEYGATE_NO_USAGE,
      label: 'counting off',
      start: async () => await startKeygate(ctx, 'keygate-nousage', { usage: { enabled: false } }),
      headers: bearer(benchKeys.personal.key)
    },
    {
      name: 'keygate: personal key, cache warm, usage counting on ' +
        '(the headline\'s settings; ratio: counting on / counting off)',
      compareWith: KEYGATE_NO_USAGE,
      start: async () => await startKeygate(ctx, 'keygate-usage'),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.98 }
    },
    // the per-key request log (docs/request-log.md): on in the headline row and by default; here
    // off, and on again in the same rounds, compared with off (the ratio is on / off; target 2 %)
    {
      name: KEYGATE_NO_KEY_LOG,
      label: 'key log off',
      start: async () => await startKeygate(ctx, 'keygate-nokeylog', { requestLog: false }),
      headers: bearer(benchKeys.personal.key)
    },
    {
      name: 'keygate: personal key, cache warm, per-key request log on ' +
        '(the headline\'s settings; ratio: request log on / off)',
      compareWith: KEYGATE_NO_KEY_LOG,
      start: async () => await startKeygate(ctx, 'keygate-keylog'),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.98 }
    },
    // webhooks (docs/webhooks.md): on in the headline row and by default (the dispatcher
    // polling Redis in the background); here off, and on again in the same rounds, compared
    // with off: hooks are not on the request path, so the ratio is 1 within the noise
    {
      name: KEYGATE_NO_WEBHOOKS,
      label: 'webhooks off',
      start: async () => await startKeygate(ctx, 'keygate-nowebhooks', { webhooks: false }),
      headers: bearer(benchKeys.personal.key)
    },
    {
      name: 'keygate: personal key, cache warm, webhooks on (the headline\'s settings; ratio: on / off)',
      label: 'webhooks on',
      compareWith: KEYGATE_NO_WEBHOOKS,
      start: async () => await startKeygate(ctx, 'keygate-webhooks', { webhooks: true }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.98 }
    },
    // tracing (docs/tracing.md): every request a SERVER and a CLIENT span, exported in
    // batches over OTLP/HTTP as protobuf (`tracing.protocol: http/protobuf`, the encoding a
    // collector reads cheapest) to a stand-in collector; a BENCH_COMPARE build in its own
    // default encoding (a build before the setting: JSON); the headline row is tracing off
    {
      name: 'keygate: personal key, cache warm, tracing on (sample_ratio 1.0, OTLP/HTTP protobuf to a local sink)',
      compareWith: KEYGATE_PROXY,
      start: async () => await startKeygate(ctx, 'keygate-tracing', {
        tracing: ctx.keygateCli === undefined ? { sampleRatio: 1, protocol: 'http/protobuf' } : { sampleRatio: 1 }
      }),
      headers: bearer(benchKeys.personal.key),
      target: { cpuRatio: 0.85 }
    },
    {
      // every request a miss: nearly all the key's first in the process
      name: `keygate: cold keys, ${coldKeyCount().toLocaleString('en')} distinct personal keys cycled in order ` +
        '(a cache miss per request; the misses of one event-loop turn share one Redis round trip)',
      start: async () => {
        coldKeys()
        // usage counting off: its writes (one EVALSHA per 500 keys) would be counted as reads
        return await startKeygate(ctx, 'keygate-cold', { coldKeys: true, usage: { enabled: false } })
      },
      headers: {},
      headersFor: () => ({ authorization: nextColdAuthorization() }),
      maxScriptsPerMiss: 1,
      target: { cpuRatio: 0.8 }
    },
    {
      name: 'keygate: personal key, cache disabled (Redis per request)',
      start: async () => await startKeygate(ctx, 'keygate-nocache', { cache: '{ enabled: false }' }),
      headers: bearer(benchKeys.personal.key)
    },
    {
      name: 'keygate: malformed keys (401, no Redis)',
      start: async () => await startKeygate(ctx, 'keygate-malformed'),
      headers: bearer('kg_not-a-real-key'),
      expectedStatus: 401
    },
    {
      name: `keygate: unknown well-formed keys, ${FORGED_IDS.toLocaleString('en')} distinct forged ids ` +
        '(401, per-peer limit)',
      start: async () => await startKeygate(ctx, 'keygate-unknown'),
      headers: {},
      headersFor: () => bearer(nextForgedKey()),
      expectedStatus: 401,
      maxRecordsPer1k: 1
    },
    // imported keys (docs/imports.md): a foreign token has no checksum to refuse it
    // locally, so the unknown-key budget and the negative cache are all that keep Redis out
    {
      name: 'keygate: unknown foreign-format tokens, accept_imported on, ' +
        `${FORGED_IDS.toLocaleString('en')} distinct forged tokens (401, per-peer limit)`,
      start: async () => await startKeygate(ctx, 'keygate-unknown-foreign', { keys: '{ accept_imported: true }' }),
      headers: {},
      headersFor: () => bearer(nextForgedForeignToken()),
      expectedStatus: 401,
      maxRecordsPer1k: 1
    },
    {
      name: 'keygate: imported key (Kong-style token), accept_imported on, cache warm',
      compareWith: KEYGATE_PROXY,
      start: async () => await startKeygate(ctx, 'keygate-imported', { keys: '{ accept_imported: true }' }),
      headers: bearer(benchImported.token),
      maxRecordsPer1k: 1,
      target: { cpuRatio: 0.9 }
    },
    {
      name: 'keygate: personal key, --workers 2, unpinned',
      start: async () => await startKeygate(ctx, 'keygate-workers', { workers: 2 }),
      headers: bearer(benchKeys.personal.key)
    }
  ]
}

/**
 * The decision request Traefik's ForwardAuth sends for a client's `GET /api/v1/users`:
 * to the authorizer's own address, the original method and target in
 * `X-Forwarded-Method`/`-Uri`, the client's address appended to `X-Forwarded-For`, and
 * the client's headers (its `Authorization`).
 */
export function traefikDecision (key: string): Record<string, string> {
  return {
    'x-forwarded-method': 'GET',
    'x-forwarded-proto': 'http',
    'x-forwarded-host': 'api.example.com',
    'x-forwarded-uri': BENCH_PATH,
    'x-forwarded-for': '203.0.113.7',
    authorization: `Bearer ${key}`
  }
}

/**
 * The fastify hello-world: 200, empty body. It is sent the decision rows' request (same
 * target, same headers), so their ratio to it is what a decision costs over parsing
 * that request and writing an empty answer.
 */
export function helloScenario (ctx: ScenarioContext): Scenario {
  return {
    name: HELLO,
    label: 'hello-world',
    start: async () => await startHello(ctx.distDir, ctx.serverCpus),
    path: '/',
    headers: traefikDecision(benchKeys.personal.key)
  }
}

/** keygate with the authorizer listener, as the server under test (the load goes to that listener). */
async function startAuthorizer (ctx: ScenarioContext, name: string, o: KeygateOptions = {}): Promise<RunningServer> {
  const gw = await startKeygate(ctx, name, { ...o, authz: true })
  if (gw.authzPort === undefined) throw new Error(`${name}: no authorizer port`)
  return { port: gw.authzPort, pid: gw.pid, stop: gw.stop }
}

/**
 * nginx (docs/authorizer.md's configuration) in front of the origin, asking keygate's
 * authorizer: nginx and keygate on the server core together. The CPU columns are the
 * pair's; the peak RSS is keygate's.
 */
async function startNginxAuthorizer (
  ctx: ScenarioContext, name = 'keygate-authz-nginx', o: KeygateOptions = {}
): Promise<RunningServer> {
  const gw = await startKeygate(ctx, name, { ...o, authz: true })
  const pid = gw.pid
  if (gw.authzPort === undefined || pid === undefined) throw new Error(`${name}: no authorizer port or pid`)
  let nginx: RunningServer & { pid: number }
  try {
    nginx = await startNginx(gw.authzPort, ctx.originUrl, ctx.serverCpus)
  } catch (err: unknown) {
    await gw.stop()
    throw err
  }
  return {
    port: nginx.port,
    pid,
    parts: [{ label: 'nginx', pid: nginx.pid }, { label: 'keygate', pid }],
    async stop () {
      await nginx.stop()
      await gw.stop()
    }
  }
}

/** nginx with the Lua key check (bench/nginx-lua.ts), with a Redis of its own holding the bench's records. */
async function startNginxLuaAuth (ctx: ScenarioContext): Promise<RunningServer> {
  const redis = await startBenchRedis(ctx, 'redis-lua')
  let nginx: ChildServer
  try {
    await seed(redis.url)
    nginx = await startNginxLua(Number(new URL(redis.url).port), PREFIX, ctx.originUrl, ctx.serverCpus)
  } catch (err: unknown) {
    await redis.server.stop()
    throw err
  }
  return {
    port: nginx.port,
    pid: nginx.pid,
    async stop () {
      await nginx.stop()
      await redis.server.stop()
    }
  }
}

/**
 * docs/authorizer.md's nginx asking node:http's hello world (bench/hello.ts), which allows everything: both on the
 * server core.
 */
async function startNginxHello (ctx: ScenarioContext): Promise<RunningServer> {
  const hello = await startHello(ctx.distDir, ctx.serverCpus, undefined, 'node-http')
  let nginx: ChildServer
  try {
    nginx = await startNginx(hello.port, ctx.originUrl, ctx.serverCpus, 200)
  } catch (err: unknown) {
    await hello.stop()
    throw err
  }
  return {
    port: nginx.port,
    pid: hello.pid,
    parts: [{ label: 'nginx', pid: nginx.pid }, { label: 'hello', pid: hello.pid }],
    async stop () {
      await nginx.stop()
      await hello.stop()
    }
  }
}

/**
 * Authorizer rows: cached decisions on the authorizer listener (personal key, Traefik's
 * request shape) and a refused one (a malformed key, 401), each compared with the
 * hello-world; and end to end, the same origin behind each: nginx + Lua auth (Kong's
 * architecture) against keygate's own proxy (the headline row), and against nginx + Lua,
 * nginx + the authorizer (its target), nginx + a `node:http` hello world (the floor of any
 * Node authorizer) and nginx alone (no auth_request: the ceiling of them all).
 */
export function authorizerScenarios (ctx: ScenarioContext): Scenario[] {
  return [
    {
      name: AUTHZ_CACHED,
      label: 'authz cached',
      compareWith: HELLO,
      start: async () => await startAuthorizer(ctx, 'keygate-authz'),
      path: '/',
      headers: traefikDecision(benchKeys.personal.key),
      target: { reqPerSec: 25_000, cpuUsPerReq: 40, cpuRatio: 0.5 }
    },
    {
      name: `authz: personal key, cache warm, log sampled (log.allowed_sample_ratio: ${LOG_SAMPLE})`,
      compareWith: AUTHZ_CACHED,
      start: async () => await startAuthorizer(ctx, 'keygate-authz-log-sampled', { logSample: LOG_SAMPLE }),
      path: '/',
      headers: traefikDecision(benchKeys.personal.key)
    },
    {
      name: 'authz: malformed keys (401 decision, no Redis)',
      compareWith: HELLO,
      start: async () => await startAuthorizer(ctx, 'keygate-authz-malformed'),
      path: '/',
      headers: traefikDecision('kg_not-a-real-key'),
      expectedStatus: 401
    },
    // the signed identity assertion on the 200, against the same decision without it
    {
      name: 'authz: personal key, cache warm, assertion bind: identity (ES256)',
      compareWith: AUTHZ_CACHED,
      start: async () =>
        await startAuthorizer(ctx, 'keygate-authz-assert-identity', { assertion: { bind: 'identity', alg: 'ES256' } }),
      path: '/',
      headers: traefikDecision(benchKeys.personal.key),
      target: { cpuRatio: 0.95 }
    },
    {
      name: 'authz: personal key, cache warm, assertion bind: request (ES256)',
      compareWith: AUTHZ_CACHED,
      start: async () =>
        await startAuthorizer(ctx, 'keygate-authz-assert-request', { assertion: { bind: 'request', alg: 'ES256' } }),
      path: '/',
      headers: traefikDecision(benchKeys.personal.key),
      target: { cpuRatio: 0.75 }
    },
    {
      name: 'nginx + keygate authz: personal key, cache warm (auth_request; both on the server core)',
      compareWith: NGINX_LUA,
      start: async () => await startNginxAuthorizer(ctx),
      headers: { authorization: `Bearer ${benchKeys.personal.key}` },
      target: { cpuRatio: 0.4 }
    },
    {
      // the decision lines sampled (every refusal still logged), as the nginx + Lua row below writes none
      name: `nginx + keygate authz: personal key, cache warm, log sampled (log.allowed_sample_ratio: ${LOG_SAMPLE})`,
      compareWith: NGINX_LUA,
      start: async () => await startNginxAuthorizer(ctx, 'keygate-authz-nginx-log-sampled', { logSample: LOG_SAMPLE }),
      headers: { authorization: `Bearer ${benchKeys.personal.key}` }
    },
    {
      name: NGINX_LUA,
      label: 'nginx + Lua',
      compareWith: KEYGATE_PROXY,
      start: async () => await startNginxLuaAuth(ctx),
      headers: { authorization: `Bearer ${benchKeys.personal.key}` }
    },
    {
      // the floor of any Node authorizer behind nginx: node:http answering every decision 200
      name: 'nginx + node:http hello world as the authorizer (auth_request; both on the server core)',
      compareWith: NGINX_LUA,
      start: async () => await startNginxHello(ctx),
      headers: { authorization: `Bearer ${benchKeys.personal.key}` }
    },
    {
      // the ceiling of the nginx rows: their distance from it is what asking for a decision costs
      name: 'nginx alone: the same proxying, no auth_request (the authz rows\' ingress without keygate)',
      compareWith: NGINX_LUA,
      start: async () => await startNginx(undefined, ctx.originUrl, ctx.serverCpus),
      headers: { authorization: `Bearer ${benchKeys.personal.key}` }
    }
  ]
}

/**
 * `BENCH_COMPARE=<another keygate checkout, built>`: the headline, tracing, cold-keys and
 * cached authorizer rows of that build too, in the same interleaved rounds as this build's and
 * against the same baseline and hello-world, so a change is compared before and after
 * in one run. Both builds must read the same registry format (they share the seeding).
 */
export function compareScenarios (ctx: ScenarioContext): Scenario[] {
  const dir = process.env.BENCH_COMPARE
  if (dir === undefined || dir === '') return []
  const keygateCli = resolve(dir, 'dist/cli/main.js')
  if (!existsSync(keygateCli)) throw new Error(`BENCH_COMPARE: no ${keygateCli} (run npm run build there first)`)
  const theirs = { ...ctx, keygateCli }
  const rows = [...keygateScenarios(theirs), ...authorizerScenarios(theirs)]
  const wanted = (name: string): boolean =>
    name === KEYGATE_PROXY ||
    name === AUTHZ_CACHED ||
    name.startsWith('keygate: cold keys') ||
    name.startsWith('keygate: personal key, cache warm, tracing on')
  return rows
    .filter((s) => wanted(s.name))
    .map((s) => ({ ...s, name: `compare build: ${s.name}`, label: undefined, target: undefined }))
}
