/**
 * The open WebSocket connections of one gateway process, and what keeps each one
 * allowed: the caps on how many may be open, and the decision taken again whenever
 * something it depends on may have changed.
 *
 * Caps: `websocket.max_connections` in total and `websocket.max_connections_per_key`
 * per key id, counted from the moment an upgrade is allowed (while its upstream
 * handshake runs) until both sides are closed.
 *
 * Decided again: each connection depends on its key's record, its user's (personal
 * keys), its role's and its org's. Push invalidation (src/cache/invalidation.ts) tells
 * this process of every change to one of them, after the cache dropped it; each
 * connection that depends on it is decided again by the same decision function as its
 * upgrade (decide-request.ts, without the rate limits: a connection that stays open is
 * not a new request), with the same method (GET), path, route and credential, so what it
 * reads comes fresh from Redis. A flush, or the invalidation channel coming back,
 * decides every connection again; while the channel is down (or `cache.tracking` is
 * off), every connection is decided again every `cache.ttl_ms` (what the cache then
 * serves is at most that old). And at the key's `expires_at`, a timer decides it again.
 *
 * A connection whose decision is now a refusal is closed with 1008 (policy violation)
 * on both sides; one whose identity changed (another role, org or user: what the
 * upstream was told no longer holds) too; 1013 (try again later) when the registry
 * cannot be read past `cache.stale_if_error_s`. The close reason is the same for every
 * refusal; the precise reason goes to the log line.
 *
 * The credential a connection was opened with stays in its entry here, in memory, for
 * these decisions, and nowhere else.
 */
import type { Logger } from 'pino'
import { cacheName } from '../cache/record-cache.js'
import type { Tracking } from '../cache/tracking.js'
import type { Reason } from '../errors.js'
import type { CloseCause, WebSocketMeter } from '../metrics/websocket-metrics.js'
import type { Route } from '../decision/route-table.js'
import type { Identity } from '../decision/identity.js'
import type { RequestDecider } from '../decision/decide-request.js'
import type { Verdict } from '../decision/verdict.js'
import { CLOSE, CLOSE_REASON } from './close-codes.js'
import type { Relay } from './relay.js'

/** The longest delay node's timers take (about 24.8 days); a later expiry is re-armed then. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** An allowed upgrade: its slot under the caps, from the decision until both sides are closed. */
export interface Slot {
  readonly requestId: string
  /** the path decided on: the one the connection is decided on again */
  readonly path: string
  /** the credential's header pairs (`Authorization`), for the decisions taken again */
  readonly credential: readonly string[]
  /** the client's address the upgrade was decided for (a key's allowed addresses are checked again against it) */
  readonly client: string | undefined
  /** the route it was decided under (a test key is decided again against it) */
  readonly route?: Route | undefined
  /**
   * what the upstream was told; replaced only by an equal one (a change closes the connection), so its key id is the
   * slot's for good
   */
  identity: Identity
  /** the rule's index, for the log line */
  rule: number | undefined
  openedAt: number
  names: string[]
  relay: Relay | undefined
  /** something it depends on changed while its upstream handshake ran */
  changed: boolean
  deciding: boolean
  decideAgain: boolean
  closing: boolean
  expiry: NodeJS.Timeout | undefined
}

export type Admission = Slot | 'over_total' | 'over_key'

export interface ConnectionsOptions {
  maxTotal: number
  maxPerKey: number
  /** the decision without rate limits (decide-request.ts) */
  decider: RequestDecider
  tracking: Tracking
  /** how often every connection is decided again while push invalidation is not up */
  sweepEveryMs: number
  meter: WebSocketMeter
  logger: Logger
  /** how long closes may take at shutdown before the sockets are dropped */
  closeTimeoutMs: number
}

export class Connections {
  private readonly slots = new Set<Slot>()
  private readonly perKey = new Map<string, number>()
  /** cache name (record-cache.ts) -> the slots that depend on that record */
  private readonly byName = new Map<string, Set<Slot>>()
  private readonly sweep: NodeJS.Timeout
  private shuttingDown = false

  constructor (private readonly o: ConnectionsOptions) {
    o.tracking.onChange((name) => { this.changed(name) })
    this.sweep = setInterval(() => { if (!o.tracking.up) this.changed(undefined) }, o.sweepEveryMs)
    this.sweep.unref()
  }

  /** Open connections, and allowed upgrades whose upstream handshake runs. */
  get size (): number {
    return this.slots.size
  }

  /** A slot for an allowed upgrade, or the cap it is over. */
  admit (requestId: string, path: string, credential: readonly string[], identity: Identity, rule: number | undefined,
    client?: string, route?: Route): Admission {
    if (this.shuttingDown || this.slots.size >= this.o.maxTotal) return 'over_total'
    const ofKey = this.perKey.get(identity.keyId) ?? 0
    if (ofKey >= this.o.maxPerKey) return 'over_key'
    const slot: Slot = {
      requestId,
      path,
      credential,
      client,
      route,
      identity,
      rule,
      openedAt: Date.now(),
      names: dependencies(identity),
      relay: undefined,
      changed: false,
      deciding: false,
      decideAgain: false,
      closing: false,
      expiry: undefined
    }
    this.slots.add(slot)
    this.perKey.set(identity.keyId, ofKey + 1)
    this.index(slot)
    return slot
  }

  /** The upstream handshake failed, or the client left: the slot is free again. */
  release (slot: Slot): void {
    if (!this.slots.delete(slot)) return
    clearTimeout(slot.expiry)
    const left = (this.perKey.get(slot.identity.keyId) ?? 1) - 1
    if (left === 0) this.perKey.delete(slot.identity.keyId)
    else this.perKey.set(slot.identity.keyId, left)
    for (const name of slot.names) {
      const set = this.byName.get(name)
      set?.delete(slot)
      if (set?.size === 0) this.byName.delete(name)
    }
  }

  /** Both sides are open and relayed: from here the slot's decision is kept current. */
  opened (slot: Slot, relay: Relay): void {
    slot.relay = relay
    this.o.meter.opened()
    relay.closed.then(({ cause, code }) => {
      this.release(slot)
      this.o.meter.closed(cause)
      this.o.logger.info({
        req_id: slot.requestId, key_id: slot.identity.keyId, cause, code, duration_ms: Date.now() - slot.openedAt
      }, 'websocket closed')
    }, () => {})
    if (this.shuttingDown) {
      relay.end(CLOSE.goingAway, CLOSE_REASON.shutdown, 'shutdown')
      return
    }
    if (slot.changed) this.decideAgain(slot)
    else this.armExpiry(slot)
  }

  /** Closes every connection with 1001; resolves when all are closed (or dropped after closeTimeoutMs). */
  async shutdown (): Promise<void> {
    this.shuttingDown = true
    clearInterval(this.sweep)
    const closing: Array<Promise<unknown>> = []
    for (const slot of this.slots) {
      clearTimeout(slot.expiry)
      if (slot.relay === undefined) continue
      slot.closing = true
      slot.relay.end(CLOSE.goingAway, CLOSE_REASON.shutdown, 'shutdown')
      closing.push(slot.relay.closed)
    }
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.allSettled(closing),
      new Promise((resolve) => { timer = setTimeout(resolve, this.o.closeTimeoutMs + 100) })
    ])
    clearTimeout(timer)
  }

  // ---- deciding again ------------------------------------------------------------------

  private changed (name: string | undefined): void {
    const slots = name === undefined ? this.slots : this.byName.get(name)
    if (slots === undefined) return
    for (const slot of slots) {
      if (slot.relay === undefined) slot.changed = true
      else this.decideAgain(slot)
    }
  }

  private decideAgain (slot: Slot): void {
    if (slot.closing) return
    if (slot.deciding) {
      slot.decideAgain = true
      return
    }
    slot.deciding = true
    slot.decideAgain = false
    let verdict: Verdict | Promise<Verdict>
    try {
      verdict = this.o.decider.decide('GET', slot.path, slot.credential, slot.client, Date.now(), slot.route)
    } catch (err: unknown) {
      this.failed(slot, err)
      return
    }
    if (!(verdict instanceof Promise)) {
      this.apply(slot, verdict)
      return
    }
    verdict.then((v) => { this.apply(slot, v) }, (err: unknown) => { this.failed(slot, err) })
  }

  private apply (slot: Slot, verdict: Verdict): void {
    slot.deciding = false
    if (slot.closing || !this.slots.has(slot)) return
    // (anonymous cannot happen: the connection's credential is decided again; if it did, it is refused)
    if (!verdict.ok || verdict.identity === undefined) {
      const unavailable = !verdict.ok && verdict.code === 'service_unavailable'
      this.close(slot, unavailable ? CLOSE.tryAgainLater : CLOSE.policyViolation,
        unavailable ? CLOSE_REASON.unavailable : CLOSE_REASON.refused, unavailable ? 'unavailable' : 'revoked',
        verdict.ok ? 'missing_credential' : verdict.reason)
      return
    }
    if (!sameIdentity(slot.identity, verdict.identity)) {
      this.close(slot, CLOSE.policyViolation, CLOSE_REASON.refused, 'revoked', 'identity_changed')
      return
    }
    slot.identity = verdict.identity
    if (slot.decideAgain) this.decideAgain(slot)
    else this.armExpiry(slot)
  }

  /** A decision that threw (a bug, never a client's doing): fail closed. */
  private failed (slot: Slot, err: unknown): void {
    slot.deciding = false
    this.o.logger.error(
      { req_id: slot.requestId, err: { message: (err as Error).message, stack: (err as Error).stack } },
      'websocket: deciding again failed'
    )
    this.close(slot, CLOSE.tryAgainLater, CLOSE_REASON.unavailable, 'unavailable', 'internal_error')
  }

  private close (slot: Slot, code: number, reason: string, cause: CloseCause, why: Reason | 'identity_changed'): void {
    slot.closing = true
    clearTimeout(slot.expiry)
    this.o.logger.info({ req_id: slot.requestId, key_id: slot.identity.keyId, reason: why, code }, 'websocket refused')
    slot.relay?.end(code, reason, cause)
  }

  private armExpiry (slot: Slot): void {
    clearTimeout(slot.expiry)
    slot.expiry = undefined
    const at = slot.identity.expiresAt
    if (at === undefined) return
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now()))
    slot.expiry = setTimeout(() => { this.decideAgain(slot) }, delay)
    slot.expiry.unref()
  }

  private index (slot: Slot): void {
    for (const name of slot.names) {
      let set = this.byName.get(name)
      if (set === undefined) {
        set = new Set()
        this.byName.set(name, set)
      }
      set.add(slot)
    }
  }
}

/** The records a connection's decision reads: its key's, its user's (personal keys), its role's, its org's. */
function dependencies (id: Identity): string[] {
  const names = [cacheName.key(id.keyId), cacheName.role(id.role), cacheName.org(id.org)]
  if (id.userId !== undefined) names.push(cacheName.user(id.userId))
  if (id.identityId !== undefined) names.push(cacheName.identity(id.identityId))
  return names
}

/** What the upstream was told at the upgrade (the identity headers) still holds. */
function sameIdentity (a: Identity, b: Identity): boolean {
  return a.keyId === b.keyId && a.type === b.type && a.userId === b.userId && a.org === b.org && a.role === b.role &&
    a.identityId === b.identityId && a.externalId === b.externalId && a.meta?.json === b.meta?.json
}
