/**
 * A whole gateway for integration tests: a real redis-server (private, or
 * REDIS_URL), a real upstream on port 0, and keygate built with buildApp() and
 * listening on port 0. Logs are captured as parsed JSON lines. Everything is torn
 * down with the test.
 *
 * Default rules (under the route prefix /api/v1 -> upstream "core"):
 *   GET  /api/v1/users             users:read
 *   POST /api/v1/users             users:write
 *   *    /api/v1/orgs/:org/*       orgs:read, org_param org
 *   GET  /api/v1/open/*            (no permission: any valid key)
 */
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { Writable } from 'node:stream'
import { buildApp, type KeygateApp } from '../../src/app.js'
import { parseConfig } from '../../src/config/load.js'
import { keyPrefixesOf } from '../../src/registry/key-format.js'
import type { Config } from '../../src/config/schema.js'
import { createLogger } from '../../src/logger.js'
import { Fixtures } from './fixtures.js'
import { send, type HeaderList, type RawResponse } from './raw-http.js'
import { startRedis, uniquePrefix, type TestRedis } from './redis.js'
import { startUpstream, type Upstream, type UpstreamMode } from './upstream.js'

export interface LogLine {
  [field: string]: unknown
  req_id?: string
  method?: string
  path?: string
  status?: number
  key_id?: string
  reason?: string
}

export interface TestGateway {
  app: KeygateApp
  config: Config
  port: number
  adminPort: number
  /** the authorizer listener's port (with `authz_listen` in the YAML; 0 otherwise) */
  authzPort: number
  /** the gRPC authorizer's port (with `authz_grpc_listen` in the YAML; 0 otherwise) */
  authzGrpcPort: number
  redis: TestRedis
  /** a plain client for direct edits, as redis-cli would make them */
  client: Redis
  upstream: Upstream
  fixtures: Fixtures
  prefix: string
  /** every log line so far, parsed */
  logs: LogLine[]
  /** every log line so far, as written */
  rawLogs: string[]
  send: (method: string, target: string, headers?: HeaderList, body?: string) => Promise<RawResponse>
  /** GET with `Authorization: Bearer <key>` */
  get: (target: string, key?: string, headers?: Record<string, string>) => Promise<RawResponse>
  admin: (method: string, target: string, headers?: HeaderList) => Promise<RawResponse>
  /** a decision request to the authorizer listener */
  authz: (method: string, target: string, headers?: HeaderList) => Promise<RawResponse>
  /** the log line of a response, by its X-Request-Id */
  logOf: (res: RawResponse) => Promise<LogLine | undefined>
}

export interface GatewayOptions {
  /** share one Redis between gateways (it is not stopped with this gateway) */
  redis?: TestRedis
  /** share the registry namespace too (several instances on one registry) */
  prefix?: string
  upstreamMode?: UpstreamMode
  /** extra YAML merged over the defaults (top-level keys replace) */
  yaml?: string
  /** last-minute changes to the parsed config */
  configure?: (config: Config) => void
  /** seed the standard world (default true) */
  seed?: boolean
  /** extra environment for config loading (e.g. KEYGATE_ADMIN_TOKEN) */
  env?: Record<string, string>
  /** the admin listener's port (0: any free one), for a URL known before the start (an SSO redirect_uri) */
  adminPort?: number
  /** the data plane's listening address (default 127.0.0.1; `::` takes IPv6 and IPv4) */
  host?: string
}

export async function startGateway (t: Test, opts: GatewayOptions = {}): Promise<TestGateway> {
  const redis = opts.redis ?? await startRedis()
  if (opts.redis === undefined) t.teardown(() => redis.stop())
  const upstream = await startUpstream(opts.upstreamMode !== undefined ? { mode: opts.upstreamMode } : {})
  t.teardown(() => upstream.close())
  const prefix = opts.prefix ?? uniquePrefix()

  const base = `
listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
redis: { prefix: "${prefix}" }
upstreams:
  core: { url: "${upstream.url}", timeout_ms: 2000, connect_timeout_ms: 1000 }
routes:
  - { prefix: /api/v1, upstream: core }
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [orgs:read], org_param: org }
  - { method: GET,  path: /api/v1/open/*,       permissions: [] }
`
  const config = parseConfig(mergeYaml(base, opts.yaml ?? ''), { ...opts.env, KEYGATE_REDIS_URL: redis.url }, 'test')
  opts.configure?.(config)

  const rawLogs: string[] = []
  const logs: LogLine[] = []
  const sink = new Writable({
    write (chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line === '') continue
        rawLogs.push(line)
        logs.push(JSON.parse(line) as LogLine)
      }
      cb()
    }
  })
  const app = await buildApp(config, { logger: createLogger('info', sink) })
  t.teardown(() => app.close())
  await app.data.listen({ host: opts.host ?? '127.0.0.1', port: 0 })
  await app.admin.listen({ host: '127.0.0.1', port: opts.adminPort ?? 0 })
  const port = portOf(app.data)
  const adminPort = portOf(app.admin)
  if (app.authz !== undefined) await app.authz.listen({ host: '127.0.0.1', port: 0 })
  const authzPort = app.authz !== undefined ? portOf(app.authz) : 0
  const authzGrpcPort = app.authzGrpc !== undefined ? await app.authzGrpc.listen('127.0.0.1:0') : 0

  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
  client.on('error', () => {})
  t.teardown(() => { client.disconnect() })
  const fixtures = new Fixtures(client, prefix, keyPrefixesOf(config.keys))
  if (opts.seed !== false) await fixtures.standardWorld()
  await waitReady(app, config)

  const gw: TestGateway = {
    app,
    config,
    port,
    adminPort,
    authzPort,
    authzGrpcPort,
    redis,
    client,
    upstream,
    fixtures,
    prefix,
    logs,
    rawLogs,
    send: (method, target, headers = {}, body) => send(port, method, target, headers, body),
    get: (target, key, headers = {}) => send(port, 'GET', target, key === undefined ? headers : { Authorization: `Bearer ${key}`, ...headers }),
    admin: (method, target, headers = {}) => send(adminPort, method, target, headers),
    authz: (method, target, headers = {}) => send(authzPort, method, target, headers),
    async logOf (res) {
      const id = res.headers['x-request-id']
      for (let i = 0; i < 50; i++) {
        const line = logs.find((l) => l.req_id === id)
        if (line !== undefined) return line
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return undefined
    }
  }
  return gw
}

function portOf (app: KeygateApp['data']): number {
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('not listening on TCP')
  return address.port
}

async function waitReady (app: KeygateApp, config: Config): Promise<void> {
  const tracking = config.cache.enabled && config.cache.tracking
  const ready = (): boolean => app.health.up && (!tracking || app.tracking.up)
  for (let i = 0; i < 300 && !ready(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  if (!app.health.up) throw new Error('the gateway never saw Redis up')
  if (!ready()) throw new Error('push invalidation was never established')
}

/** Top-level keys of `extra` replace those of `base` (enough for test configs). */
function mergeYaml (base: string, extra: string): string {
  if (extra.trim() === '') return base
  const topKeys = new Set([...extra.matchAll(/^([A-Za-z_]+):/gm)].map((m) => m[1]))
  const kept: string[] = []
  let skipping = false
  for (const line of base.split('\n')) {
    const m = /^([A-Za-z_]+):/.exec(line)
    if (m !== null) skipping = topKeys.has(m[1])
    if (!skipping) kept.push(line)
  }
  return kept.join('\n') + '\n' + extra
}

/** Poll until `check` passes or `ms` elapse; returns the elapsed time, or -1 on timeout. */
export async function eventually (check: () => Promise<boolean>, ms = 2000, every = 20): Promise<number> {
  const start = Date.now()
  while (Date.now() - start <= ms) {
    if (await check()) return Date.now() - start
    await new Promise((resolve) => setTimeout(resolve, every))
  }
  return -1
}

/**
 * One admin API call on the admin listener: `Authorization: Bearer <credential>` when
 * one is given, a JSON body (or a string sent as it is), extra headers.
 */
export async function adminCall (gw: TestGateway, method: string, path: string, credential?: string, body?: unknown, extra: Record<string, string> = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...extra }
  if (credential !== undefined) headers.Authorization = `Bearer ${credential}`
  if (body !== undefined && headers['Content-Type'] === undefined) headers['Content-Type'] = 'application/json'
  return await send(gw.adminPort, method, path, headers as HeaderList, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body))
}
