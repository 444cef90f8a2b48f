/**
 * The window arithmetic of a bucket: a sliding window of sub-window counts, read
 * conservatively. The Lua script (script.ts) runs exactly these steps inside Redis;
 * this is their specification in TypeScript, which the unit tests check for the
 * guarantee and an integration test checks the script against.
 *
 * A limit `count/P` splits time into slots of P/10 (P is whole seconds, so a slot is
 * whole milliseconds). A bucket holds one counter per slot that has allowed requests.
 * A request at time t (Redis's clock) sees slot c = floor(t / slot) and counts every
 * slot from c - 10 to c: those overlap the window (t - P, t], the oldest one entirely,
 * though only part of it is inside the window. It is allowed when that sum is below
 * `count`, and then counted in slot c.
 *
 * Guarantee: in any interval of length P, at most `count` requests are allowed.
 * (Take the last request allowed in the interval, at t: every earlier one in it lies
 * in (t - P, t], so in the slots it counted, and that sum was below count.) The cost
 * of the conservative read: a request may be refused while up to one slot (P/10) of
 * older requests still counts, so a client sending steadily at the limit sees at least
 * `count` requests allowed per P + P/10. The refused ones are not counted.
 */
import type { RateLimit } from './limit.js'

/** slots per period */
export const SLOTS = 10

export function slotMs (limit: RateLimit): number {
  return limit.periodMs / SLOTS
}

/** A bucket's counters: slot index -> requests allowed in it. */
export type Counts = Map<number, number>

export interface Take {
  allowed: boolean
  /** requests counted in the window after this one (it included, when allowed) */
  used: number
  /** ms until the counted sum drops below what the next request needs (at least 1 ms) */
  resetMs: number
}

/** The counted slots' sum at `now`; drops older slots from `counts`. */
export function counted (counts: Counts, limit: RateLimit, now: number): number {
  const c = Math.floor(now / slotMs(limit))
  let sum = 0
  for (const [slot, n] of counts) {
    if (slot < c - SLOTS) counts.delete(slot)
    else sum += n
  }
  return sum
}

/** One request against one bucket. `commit`: count it when allowed (false: only look). */
export function take (counts: Counts, limit: RateLimit, now: number, commit = true): Take {
  const slot = slotMs(limit)
  const c = Math.floor(now / slot)
  const sum = counted(counts, limit, now)
  const allowed = sum + 1 <= limit.count
  if (allowed && commit) counts.set(c, (counts.get(c) ?? 0) + 1)
  const used = allowed && commit ? sum + 1 : sum
  return { allowed, used, resetMs: resetAfter(counts, limit, now, used) }
}

/**
 * When a request would next be allowed (refused: `used` >= count) or when one more
 * becomes available (allowed): the moment enough of the oldest slots have left the
 * read. Slot s is counted until (s + SLOTS + 1) * slot.
 */
export function resetAfter (counts: Counts, limit: RateLimit, now: number, used: number): number {
  const slot = slotMs(limit)
  const c = Math.floor(now / slot)
  const need = Math.max(1, used - limit.count + 1)
  let freed = 0
  for (let s = c - SLOTS; s <= c; s++) {
    freed += counts.get(s) ?? 0
    if (freed >= need) return Math.max(1, (s + SLOTS + 1) * slot - now)
  }
  // nothing counted: the whole window is free
  return Math.max(1, (c + SLOTS + 1) * slot - now)
}
