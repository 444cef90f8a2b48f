/**
 * A key's last decisions read back from the request log's lists (key-requests.ts writes
 * them): the admin API's and the CLI's read, newest first, of one status or class.
 */
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'

/** One decision, as the admin API answers it. */
export interface KeyRequestRecord {
  time: string
  method: string
  path: string
  status: number
  reason: string
  latency_ms: number
  client: string
  trace_id: string
}

/** Which of a key's decisions to read: at most `limit`, of one status (`429`) or class (`4xx`) when `status` is set. */
export interface KeyRequestsQuery {
  limit: number
  status?: string | undefined
}

/** A key's last decisions, newest first (the admin API's and the CLI's read). */
export async function readKeyRequests (
  redis: RegistryClient, keys: RedisKeys, keyId: string, q: KeyRequestsQuery
): Promise<KeyRequestRecord[]> {
  // (filtered: the whole list, at most request_log.per_key)
  const rows = await redis.lrange(keys.keyRequests(keyId), 0, q.status === undefined ? q.limit - 1 : -1)
  const out: KeyRequestRecord[] = []
  for (const row of rows) {
    const r = decode(row)
    if (r !== undefined && (q.status === undefined || statusMatches(r.status, q.status))) out.push(r)
    if (out.length === q.limit) break
  }
  return out
}

function statusMatches (status: number, wanted: string): boolean {
  return wanted.endsWith('xx') ? String(status)[0] === wanted[0] : String(status) === wanted
}

function decode (row: string): KeyRequestRecord | undefined {
  let v: unknown
  try {
    v = JSON.parse(row)
  } catch {
    return undefined
  }
  if (!Array.isArray(v) || v.length !== 8) return undefined
  type Row = [number, string, string, number, string, number, string, string]
  const [at, method, path, status, reason, ms, client, traceId] = v as Row
  return {
    time: new Date(Number(at)).toISOString(),
    method: String(method),
    path: String(path),
    status: Number(status),
    reason: String(reason),
    latency_ms: Number(ms),
    client: String(client),
    trace_id: String(traceId)
  }
}
