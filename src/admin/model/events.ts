/**
 * What the admin wing tells listeners in this process once a change has committed: the
 * seam webhooks (src/webhooks/, docs/webhooks.md) and other event sinks subscribe to
 * (`KeygateApp.events`). An event names ids, never a key, a secret or a hash. A listener
 * runs synchronously after the commit and must not throw; one that does is ignored, so
 * no listener can undo or delay a change.
 */

/** A key revoked because it was reported leaked (docs/leaks.md). */
export interface KeyLeakedEvent {
  type: 'key.leaked'
  key_id: string
  /** the key's org (a personal key's user's org is not looked up) */
  org: string | undefined
  /** the key's environment (docs/test-keys.md) */
  env: 'live' | 'test'
  /** where it was found, as recorded (`leak_source`) */
  leak_source: string
  /** who reported it, as the audit trail records it (`scanner:github`, `scanner:public`, `cli:<user>`...) */
  actor: string
  /** ISO 8601 */
  at: string
}

/** What every event carries: who acted, when, and the org it concerns (an org's webhooks get its events). */
interface Committed {
  /** as the audit trail records it (`cli:<user>`, `key:<id>`, `admin-token`...) */
  actor: string
  /** ISO 8601 */
  at: string
}

/** A key was created (or imported); its secret, hash and the record's other fields are never told. */
export interface KeyCreatedEvent extends Committed {
  type: 'key.created'
  key_id: string
  org: string | undefined
  env: 'live' | 'test'
  key_type: string
  user?: string | undefined
  role?: string | undefined
  name?: string | undefined
  expires_at?: string | undefined
}

export interface KeyRotatedEvent extends Committed {
  type: 'key.rotated'
  key_id: string
  new_key_id: string
  org: string | undefined
  env: 'live' | 'test'
  /** when the old key stops working */
  replaces_expires_at: string
}

/** A key revoked by an admin, its owner, or with its creator's deactivation (`reason`). */
export interface KeyRevokedEvent extends Committed {
  type: 'key.revoked'
  key_id: string
  org: string | undefined
  reason: 'revoked' | 'creator_deactivated'
}

export interface UserDeactivatedEvent extends Committed {
  type: 'user.deactivated'
  user_id: string
  org: string | undefined
  /** the BOT keys it created that were revoked in the same change */
  revoked_keys: string[]
}

/** A registry file applied (docs/registry-as-code.md): the records it created, changed and deleted. */
export interface RegistryAppliedEvent extends Committed {
  type: 'registry.applied'
  org: string | undefined
  created: string[]
  changed: string[]
  deleted: string[]
}

export type AdminEvent =
  | KeyLeakedEvent
  | KeyCreatedEvent
  | KeyRotatedEvent
  | KeyRevokedEvent
  | UserDeactivatedEvent
  | RegistryAppliedEvent

export type AdminEventListener = (event: AdminEvent) => void

export class AdminEvents {
  private readonly listeners = new Set<AdminEventListener>()

  /** Adds a listener; the function returned removes it. */
  on (listener: AdminEventListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  emit (event: AdminEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {
        // a listener's failure is its own (see above)
      }
    }
  }
}
