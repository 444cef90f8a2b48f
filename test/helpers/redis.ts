/**
 * Redis for tests.
 *
 * startRedis() uses $REDIS_URL when it is set (shared, "external" server: it
 * cannot be stopped, signalled or restarted). Otherwise it starts a private
 * `redis-server` with redis-node.ts (free 127.0.0.1 port, persistence off, ready
 * once that very process answers PING, killed when the test process goes away).
 * A private server can be signalled (SIGSTOP/SIGCONT/SIGKILL) and restarted on
 * the same port, which is what the Redis-outage tests need.
 *
 * uniquePrefix() gives each test its own key namespace, so tests sharing one
 * external Redis do not collide.
 */
import { randomBytes } from 'node:crypto'
import { asTestRedis, startRedisNode } from './redis-node.js'

export interface TestRedis {
  /** redis://host:port URL for ioredis */
  url: string
  port: number
  /** Kill the private server and wait for it to exit. No-op when external. */
  stop(): Promise<void>
  /** Send a signal to the private server; no-op if it is dead (throws when external). */
  kill(signal: NodeJS.Signals): void
  /** pid of the current private server process; undefined when external. */
  pid?: number
  /** Start a fresh server on the same port, killing the old one first if needed (throws when external). */
  restart(): Promise<void>
  external: boolean
}

export function uniquePrefix (): string {
  return `kgtest:${randomBytes(6).toString('hex')}:`
}

export async function startRedis (): Promise<TestRedis> {
  const external = process.env.REDIS_URL
  if (external !== undefined && external !== '') return externalRedis(external)
  return await startPrivateRedis()
}

/** A redis-server of the test's own, whatever REDIS_URL says (for tests that stop or signal it). */
export async function startPrivateRedis (): Promise<TestRedis> {
  const node = await startRedisNode()
  return asTestRedis(node, async () => { await node.stop() })
}

function externalRedis (url: string): TestRedis {
  const parsed = new URL(url)
  const port = parsed.port === '' ? 6379 : Number(parsed.port)
  const refuse = (what: string): Error =>
    new Error(`${what} needs a private redis-server, but REDIS_URL is set (${url}); run this test without REDIS_URL`)
  return {
    url,
    port,
    external: true,
    pid: undefined,
    stop: async () => {},
    kill: () => { throw refuse('kill()') },
    restart: async () => { throw refuse('restart()') }
  }
}

/** How many times a Redis server has run each command so far, as INFO commandstats counts them (a script's own commands included). */
export async function commandCalls (client: { info: (section: string) => Promise<string> }): Promise<Record<string, number>> {
  const calls: Record<string, number> = {}
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) {
    calls[m[1] as string] = Number(m[2])
  }
  return calls
}

/**
 * The registry's Lua script calls (EVAL the first time, then EVALSHA) a Redis server has
 * executed so far: one round trip each (the misses of one event-loop turn share one).
 */
export async function scriptCalls (client: { info: (section: string) => Promise<string> }): Promise<number> {
  const calls = await commandCalls(client)
  return (calls['evalsha'] ?? 0) + (calls['eval'] ?? 0)
}
