/**
 * What the admin wing tells listeners in this process once a change has committed: the
 * seam webhooks and other event sinks subscribe to (`KeygateApp.events`). A listener
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

export type AdminEvent = KeyLeakedEvent

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
