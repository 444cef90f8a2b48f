/**
 * The audit export's state in Redis (src/admin/audit-export/, docs/audit-export.md):
 *
 *   <prefix>audit-export:cursor   the id of the last audit entry the OTLP endpoint accepted
 *   <prefix>audit-export:lease    the token of the instance shipping, with an expiry (PX)
 *
 * One instance ships at a time: the one holding the lease, which it renews before each
 * batch; another takes it over once it expires (the holder stopped or lost Redis).
 * The cursor moves only by the lease's holder (one script: compare the token, then
 * set), so an instance that lost its lease mid-batch cannot move it back; what it
 * shipped is shipped again by the next holder (at least once).
 */
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import type { AuditEntry } from '../model/views.js'
import { entryOf } from './audit-log.js'

/** KEYS: lease; ARGV: token, ms. Takes the lease when free, renews it when held: 1; held by another: 0. */
const LEASE_LUA = `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`
/** KEYS: lease, cursor; ARGV: token, entry id. Moves the cursor only under the lease: 1, else 0. */
const ADVANCE_LUA = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`
/** KEYS: lease; ARGV: token. Gives the lease up if held. */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`

/** Takes or renews the export lease for `ms`; false: another instance holds it. */
export async function holdExportLease (
  redis: RegistryClient, keys: RedisKeys, token: string, ms: number
): Promise<boolean> {
  return Number(await redis.eval(LEASE_LUA, 1, keys.auditExportLease, token, ms)) === 1
}

/** Gives the lease up (a graceful stop: another instance takes over at once). */
export async function releaseExportLease (redis: RegistryClient, keys: RedisKeys, token: string): Promise<void> {
  await redis.eval(RELEASE_LUA, 1, keys.auditExportLease, token)
}

/** Moves the cursor to `id` if `token` still holds the lease; false: it does not. */
export async function advanceExportCursor (
  redis: RegistryClient, keys: RedisKeys, token: string, id: string
): Promise<boolean> {
  return Number(await redis.eval(ADVANCE_LUA, 2, keys.auditExportLease, keys.auditExportCursor, token, id)) === 1
}

/** Up to `count` entries after the cursor, oldest first, and the cursor read. */
export async function entriesToExport (
  redis: RegistryClient, keys: RedisKeys, count: number
): Promise<{ cursor: string | undefined, entries: AuditEntry[] }> {
  const cursor = (await redis.get(keys.auditExportCursor)) ?? undefined
  const rows = await redis.xrange(keys.audit, cursor === undefined ? '-' : `(${cursor}`, '+', 'COUNT', count)
  return { cursor, entries: rows.map(([id, flat]) => entryOf(id, flat)) }
}
