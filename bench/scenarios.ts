// The scenarios measured by bench/run.ts. The first one is the baseline every
// other row is compared with; keygate rows come from keygateScenarios().
import { FORGED_IDS, nextForgedKey } from './forged-keys.js'
import { BENCH_RATE_LIMIT, benchKeys, startKeygate } from './keygate.js'
import { startBaseline } from './servers.js'
import type { Scenario, ScenarioContext } from './types.js'

export function baselineScenario (ctx: ScenarioContext): Scenario {
  return {
    name: 'baseline: fastify + @fastify/http-proxy (no auth)',
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
    name: 'control: the same plain proxy again (A/A: its distance from 1.00× is the noise)',
    start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus),
    headers: {}
  }
}

/**
 * The reference row: fastify + @fastify/reply-from, no auth. keygate proxies with
 * reply-from directly (src/pipeline/proxy.ts), so keygate's ratio divided by this row's
 * is the cost of authentication, headers and the log alone, apart from what keygate
 * saves by not running @fastify/http-proxy's route handler.
 */
export function referenceScenario (ctx: ScenarioContext): Scenario {
  return {
    name: 'reference: fastify + @fastify/reply-from (no auth; keygate\'s proxy core)',
    start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus, undefined, 'reply-from'),
    headers: {}
  }
}

/**
 * keygate rows: valid keys with the cache warm (the headline), the same with the
 * cache disabled (one Redis round trip per request), a flood of malformed keys
 * (refused locally, no Redis), a flood of forged well-formed keys (a new id every
 * request, valid checksums: the per-peer unknown-key limit keeps Redis out), a key
 * under a rate limit (the limiter's one Lua call per request; the cache-warm rows are
 * keys under no limit, which cost no Redis command), and the headline again with two
 * worker processes (unpinned: it needs both cores).
 */
export function keygateScenarios (ctx: ScenarioContext): Scenario[] {
  const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` })
  return [
    { name: 'keygate: personal key, cache warm', start: async () => await startKeygate(ctx, 'keygate-cached'), headers: bearer(benchKeys.personal.key) },
    { name: 'keygate: BOT key, cache warm', start: async () => await startKeygate(ctx, 'keygate-bot'), headers: bearer(benchKeys.bot.key) },
    { name: 'keygate: personal key, cache warm, request log off', start: async () => await startKeygate(ctx, 'keygate-nolog', { logLevel: 'silent' }), headers: bearer(benchKeys.personal.key) },
    {
      name: `keygate: personal key with a rate limit (${BENCH_RATE_LIMIT}), cache warm: one Lua call per request`,
      start: async () => await startKeygate(ctx, 'keygate-limited'),
      headers: bearer(benchKeys.limited.key),
      maxReadsPer1k: 1001
    },
    { name: 'keygate: personal key, cache disabled (Redis per request)', start: async () => await startKeygate(ctx, 'keygate-nocache', { cache: '{ enabled: false }' }), headers: bearer(benchKeys.personal.key) },
    { name: 'keygate: malformed keys (401, no Redis)', start: async () => await startKeygate(ctx, 'keygate-malformed'), headers: bearer('kg_not-a-real-key'), expectedStatus: 401 },
    {
      name: `keygate: unknown well-formed keys, ${FORGED_IDS.toLocaleString('en')} distinct forged ids (401, per-peer limit)`,
      start: async () => await startKeygate(ctx, 'keygate-unknown'),
      headers: {},
      headersFor: () => bearer(nextForgedKey()),
      expectedStatus: 401,
      maxReadsPer1k: 1
    },
    { name: 'keygate: personal key, --workers 2, unpinned', start: async () => await startKeygate(ctx, 'keygate-workers', { workers: 2 }), headers: bearer(benchKeys.personal.key) }
  ]
}
