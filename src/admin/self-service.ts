/**
 * The admin actions a key takes on itself from the data plane (src/data-plane/self-service.ts,
 * docs/self-service.md): its quota, its usage, its revoke and its rotation, each the admin
 * API's own action, audited with the key as the actor (`key:<id>`). The data plane has
 * already decided that the key is valid, and (to rotate) that it holds
 * `keygate:keys:self`; these act on that key alone.
 */
import { adminActions, type AdminWing } from './actions/index.js'
import { FULL_ADMIN } from './model/principal.js'
import { usageRange, type UsageRange } from '../usage/reader.js'

export interface KeySelfActions {
  quota: (keyId: string) => Promise<unknown>
  usage: (keyId: string, now: number) => Promise<unknown>
  revoke: (keyId: string) => Promise<void>
  rotate: (keyId: string, graceMs: number) => Promise<unknown>
}

export function keySelfActions (wing: AdminWing): KeySelfActions {
  const of = (keyId: string): ReturnType<typeof adminActions> => adminActions(wing, FULL_ADMIN, `key:${keyId}`)
  return {
    quota: async (keyId) => {
      const q = await of(keyId).keyQuota(keyId)
      return { key: q.key, org: q.org_allowance }
    },
    usage: async (keyId, now) => await of(keyId).keyUsage(keyId, usageRange({}, now) as UsageRange),
    revoke: async (keyId) => { await of(keyId).revokeKey(keyId) },
    rotate: async (keyId, graceMs) => await of(keyId).rotateKey(keyId, graceMs)
  }
}
