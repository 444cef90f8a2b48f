// The cold-keys row's keys: N distinct personal keys (BENCH_COLD_KEYS, default
// 100,000; 1,000 users, one role), used in order and cycled across every connection,
// so that nearly every request is the key's first in its server process: a cache
// miss and one Redis round trip. N must be at least the requests one process serves
// (warm-up and round), or the cycle comes round to keys it has cached.
import type { Redis } from 'ioredis'
import { generateKey, type NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { redisKeys } from '@keygate/gateway/dist/registry/redis-keys.js'

export const COLD_USERS = 1000
const SEED_BATCH = 5000

let keys: NewKey[] | undefined
let headers: string[] = []
let next = 0

/** How many cold keys (BENCH_COLD_KEYS). */
export function coldKeyCount (env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['BENCH_COLD_KEYS']
  if (raw === undefined || raw === '') return 100_000
  const n = Number(raw)
  if (!Number.isInteger(n) || n <= 0) throw new Error(`BENCH_COLD_KEYS must be a positive integer, got '${raw}'`)
  return n
}

/** The keys, made once per run (the Authorization headers with them). */
export function coldKeys (): NewKey[] {
  if (keys === undefined) {
    keys = Array.from({ length: coldKeyCount() }, () => generateKey('kg_'))
    headers = keys.map((k) => `Bearer ${k.key}`)
  }
  return keys
}

/** The next key's Authorization header, in order, cycled (shared by every connection). */
export function nextColdAuthorization (): string {
  const h = headers[next] as string
  next = (next + 1) % headers.length
  return h
}

/**
 * Writes the keys, their users and role into a Redis: HSETs pipelined 5,000 at a time
 * (100,000 keys in about a second).
 */
export async function seedColdKeys (
  client: Redis, prefix: string, record: (key: NewKey, fields: Record<string, string>) => Record<string, string>
): Promise<void> {
  const k = redisKeys(prefix)
  let batch = client.pipeline()
  batch.hset(k.role('cold-reader'), { permissions: 'users:read' })
  for (let u = 0; u < COLD_USERS; u++) {
    batch.hset(k.user(`cold-user${u}`), { org: 'acme', role: 'cold-reader', status: 'active' })
  }
  for (const [i, key] of coldKeys().entries()) {
    batch.hset(k.key(key.id), record(key, { type: 'personal', user: `cold-user${i % COLD_USERS}` }))
    if (batch.length >= SEED_BATCH) {
      await execOrThrow(batch)
      batch = client.pipeline()
    }
  }
  await execOrThrow(batch)
}

async function execOrThrow (batch: ReturnType<Redis['pipeline']>): Promise<void> {
  const replies = await batch.exec()
  const failed = replies?.find(([err]) => err !== null)?.[0]
  if (failed != null) throw failed
}
