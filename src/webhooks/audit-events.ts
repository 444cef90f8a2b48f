/**
 * Admin changes as webhook events. The audit trail (`<prefix>audit`, a stream written in
 * each change's own MULTI/EXEC by src/admin/store/audit-log.ts) is the durable record of
 * every admin event: the dispatcher follows it (follow.ts) and this module says which
 * events an entry means. Most actions mean none; these do:
 *
 *   key.create, key.import   key.created
 *   key.rotate               key.rotated
 *   key.revoke               key.revoked (`reason` revoked)
 *   key.leaked               key.leaked
 *   user.deactivate          user.deactivated (when the user was active), and a key.revoked
 *                            (`reason` creator_deactivated) for each BOT key revoked with it
 *   registry.apply           registry.applied
 *
 * An entry's fields: `time`, `actor`, `action`, `target` (`key:<id>`, `user:<id>`),
 * `result`, `org` (absent: none) and `detail` (a JSON object of strings). A payload is
 * built from named fields only (docs/webhooks.md), never a key, a secret or a hash. Each
 * event's id is derived from the entry's, so an entry read twice gives the same
 * `webhook-id` both times.
 */
import { createHash } from 'node:crypto'
import { fieldsOf } from '../registry/records.js'
import type { WebhookEvent } from './events.js'

/** A `msg_` id (22 base64url characters, as the delivery ids' pattern has it) derived from `parts`. */
export function derivedEventId (...parts: string[]): string {
  return `msg_${createHash('sha256').update(parts.join('\n')).digest('base64url').slice(0, 22)}`
}

/** The id of the `n`th event (0: the first) of the audit entry `entryId` of `stream`. */
export function auditEventId (stream: string, entryId: string, n = 0): string {
  return derivedEventId(stream, entryId, String(n))
}

type Data = Record<string, unknown>

/** The events the audit entry `entryId` (its fields as XRANGE gives them) means, in order. */
export function eventsOfEntry (stream: string, entryId: string, flat: readonly string[]): WebhookEvent[] {
  const f = fieldsOf(flat)
  if (f.result !== 'ok') return []
  const d = detailOf(f.detail)
  const org = f.org === undefined || f.org === '' ? undefined : f.org
  const told = (payload: Data[]): WebhookEvent[] => payload.map((data, n) => ({
    id: auditEventId(stream, entryId, n),
    type: data.type as string,
    timestamp: f.time ?? '',
    data: withoutType(data, org),
    org
  }))
  const actor = f.actor ?? ''
  const target = f.target ?? ''
  const keyId = target.startsWith('key:') ? target.slice(4) : undefined
  const env = d.env === 'test' ? 'test' : 'live'
  switch (f.action) {
    case 'key.create':
    case 'key.import':
      if (keyId === undefined) return []
      return told([{
        type: 'key.created',
        key_id: keyId,
        env,
        key_type: d.type ?? '',
        user: d.user,
        role: d.role,
        name: d.name,
        expires_at: d.expires_at,
        actor
      }])
    case 'key.rotate':
      if (keyId === undefined || d.new_key === undefined) return []
      return told([{
        type: 'key.rotated',
        key_id: keyId,
        new_key_id: d.new_key,
        env,
        replaces_expires_at: d.replaces_expires_at,
        actor
      }])
    case 'key.revoke':
      return keyId === undefined ? [] : told([{ type: 'key.revoked', key_id: keyId, reason: 'revoked', actor }])
    case 'key.leaked':
      if (keyId === undefined) return []
      return told([{ type: 'key.leaked', key_id: keyId, env, leak_source: d.leak_source ?? '', actor }])
    case 'user.deactivate': {
      if (!target.startsWith('user:')) return []
      const revoked = listOf(d.revoked_keys)
      const keys = revoked.map((k) => ({ type: 'key.revoked', key_id: k, reason: 'creator_deactivated', actor }))
      if (d.to !== 'deactivated' || d.from === 'deactivated') return told(keys)
      return told([{ type: 'user.deactivated', user_id: target.slice(5), revoked_keys: revoked, actor }, ...keys])
    }
    case 'registry.apply':
      return told([{
        type: 'registry.applied',
        created: listOf(d.created),
        changed: listOf(d.changed),
        deleted: listOf(d.deleted),
        actor
      }])
    default:
      return []
  }
}

/** `data` without its type and its undefined fields; with the org, when there is one. */
function withoutType (data: Data, org: string | undefined): Data {
  const out: Data = {}
  for (const [k, v] of Object.entries(data)) if (v !== undefined && k !== 'type') out[k] = v
  if (org !== undefined) out.org = org
  return out
}

function detailOf (text: string | undefined): Record<string, string | undefined> {
  try {
    const v: unknown = JSON.parse(text ?? '{}')
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return {}
    const out: Record<string, string> = {}
    for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x
    return out
  } catch {
    return {}
  }
}

function listOf (text: string | undefined): string[] {
  return (text ?? '').split(' ').filter((x) => x !== '')
}
