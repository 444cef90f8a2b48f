// The scenarios measured by bench/run.ts. The first one is the baseline every
// other row is compared with; keygate rows come from keygateScenarios().
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
 * TODO(keygate): return the keygate scenarios once src/ builds. Nothing here
 * yet, so the runner only measures the baseline.
 *
 * Each scenario's start() should, in order:
 *   1. make sure Redis is reachable (spawn `redis-server --port <freePort()>`
 *      with spawnServer({ cpus: ctx.auxCpus, ... }) or use KEYGATE_REDIS_URL
 *      from the environment) and seed the API keys the scenario sends;
 *   2. write a YAML config (tmp dir) whose upstream is ctx.originUrl and whose
 *      route covers GET /api/v1/users, with request logging off;
 *   3. spawnServer({
 *        name: 'keygate', command: process.execPath,
 *        args: [join(ctx.distDir, 'src', 'cli', 'main.js'), 'serve'],
 *        env: { KEYGATE_CONFIG, KEYGATE_REDIS_URL,
 *               KEYGATE_LISTEN: `127.0.0.1:${port}`, KEYGATE_ADMIN_LISTEN: `127.0.0.1:${adminPort}` },
 *        cpus: ctx.serverCpus, port, readyUrl: <an admin health URL>, isReady: (s) => s === 200
 *      })
 *      and return it (a ChildServer is a RunningServer; its stop() must also
 *      stop the Redis it started, if any).
 *
 * Scenarios to add, each with its headers:
 *   - 'keygate: valid key, cache warm'    Authorization: Bearer <valid key>   (the headline row)
 *   - 'keygate: valid key, cache disabled' same header, config with the key cache off (one Redis lookup per request)
 *   - 'keygate: malformed keys flood'     Authorization: Bearer not-a-key, expectedStatus: 401
 *   - 'keygate: unknown keys'             Authorization: Bearer <well-formed, not in Redis>, expectedStatus: 401
 * Rejection scenarios must set expectedStatus, otherwise their 401s are
 * counted as failures and the run exits non-zero.
 */
export function keygateScenarios (ctx: ScenarioContext): Scenario[] {
  return [] // uses ctx once implemented
}
