/**
 * `keygate config check --connect`: after the file, what it names must answer: Redis
 * (a PING over the configured topology, credentials and TLS) and every origin of every
 * upstream (one `GET /`: any HTTP status means it answers; its TLS files as the gateway
 * reads them). The two most common first-day mistakes, a wrong `KEYGATE_REDIS_URL` and an
 * upstream that is not running, show here instead of as 503s and 502s.
 */
import { Client } from 'undici'
import type { Config } from '../config/schema.js'
import { describeTarget, parseRedisUrl } from '../config/redis-url.js'
import { readUpstreamTls, upstreamOrigins } from '../config/upstreams.js'
import { connectOptions } from '../data-plane/upstream-pool/connect-options.js'
import { createRedis } from '../registry/redis-client.js'

export interface Reached {
  /** `redis`, or `upstream <name>` */
  what: string
  /** the Redis target (hosts, never a credential), or the origin */
  target: string
  ok: boolean
  /** what answered, or why nothing did */
  detail: string
}

export async function checkConnections (config: Config): Promise<Reached[]> {
  const upstreams = Object.entries(config.upstreams).flatMap(([name, u]) =>
    upstreamOrigins(u).map((origin) => reachUpstream(name, u, origin)))
  return await Promise.all([reachRedis(config), ...upstreams])
}

async function reachRedis (config: Config): Promise<Reached> {
  const target = describeTarget(parseRedisUrl(config.redis.url))
  const redis = createRedis(config.redis, { queueWhileConnecting: true })
  let lastError: unknown
  redis.on('error', (err: unknown) => { lastError = err })
  const waitMs = 2 * config.redis.connect_timeout_ms + config.redis.command_timeout_ms
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      redis.ping(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => { reject(new Error(`no answer within ${waitMs} ms`)) }, waitMs)
      })
    ])
    return { what: 'redis', target, ok: true, detail: `answered PING in ${Math.round(performance.now() - started)} ms` }
  } catch (err: unknown) {
    return { what: 'redis', target, ok: false, detail: why(lastError ?? err) }
  } finally {
    clearTimeout(timer)
    redis.disconnect()
  }
}

async function reachUpstream (name: string, u: Config['upstreams'][string], origin: string): Promise<Reached> {
  const what = `upstream ${name}`
  const client = new Client(origin, { connect: connectOptions(u, readUpstreamTls(name, u).tls), pipelining: 1 })
  try {
    const res = await client.request({
      method: 'GET',
      path: '/',
      headers: { host: new URL(origin).host, 'user-agent': 'keygate-config-check' },
      headersTimeout: u.timeout_ms,
      bodyTimeout: u.timeout_ms,
      signal: AbortSignal.timeout(u.connect_timeout_ms + u.timeout_ms)
    })
    await res.body.dump()
    return { what, target: origin, ok: true, detail: `answered ${res.statusCode} to GET /` }
  } catch (err: unknown) {
    return { what, target: origin, ok: false, detail: why(err) }
  } finally {
    await client.close().catch(() => {})
  }
}

const CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name not found',
  ETIMEDOUT: 'no connection within the connect timeout',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'connection reset',
  UND_ERR_CONNECT_TIMEOUT: 'no connection within connect_timeout_ms',
  UND_ERR_HEADERS_TIMEOUT: 'connected, but no answer within timeout_ms',
  UND_ERR_SOCKET: 'connection closed before an answer'
}

/** A failure in words: the cause's code where one is known, else the (Redis or TLS) message, one line. */
function why (err: unknown): string {
  const e = err as { code?: unknown, message?: unknown, cause?: unknown }
  const code = typeof e?.code === 'string' ? e.code : undefined
  if (code !== undefined && CAUSES[code] !== undefined) return CAUSES[code] as string
  if (e?.cause !== undefined && e.cause !== err) {
    const inner = why(e.cause)
    if (inner !== 'unknown error') return inner
  }
  if (typeof e?.message === 'string' && e.message !== '') return e.message.split('\n')[0] as string
  return 'unknown error'
}
