/**
 * The window arithmetic of a bucket: a sliding window of sub-window counts, read
 * conservatively. The Lua script (script.ts) runs exactly these steps inside Redis;
 * this is their specification in TypeScript, which the unit tests check for the
 * guarantee and an integration test checks the script against.
 *
 * A limit `count/P` splits time into slots of P/10 (P is whole seconds, so a slot is
 * whole milliseconds). A bucket holds, per slot that has allowed requests, their number
 * and the time of the latest. A request at time t (Redis's clock) counts every slot
 * whose latest request is inside the window (t - P, t]: such a slot may also hold
 * earlier requests, outside the window, which is the conservative part. It is allowed
 * when that sum is below `count`, and then counted in slot floor(t / slot).
 *
 * Guarantee: in any interval of length P, at most `count` requests are allowed.
 * (Take the last request allowed in the interval, at t: every earlier one in it lies
 * in (t - P, t], so its slot's latest request does too, and that slot was counted; the
 * sum was below count.) The cost of the conservative read: a request may be refused
 * while requests older than P still count, up to one slot's worth (P/10), so a client
 * sending steadily at the limit sees at least `count` requests allowed per P + P/10.
 * The refused ones are not counted. A reset is when a slot's latest request leaves the
 * window: never more than P away.
 */
import type { RateLimit } from '../config/rate-limit.js'

/** slots per period */
export const SLOTS = 10

export function slotMs (limit: RateLimit): number {
  return limit.periodMs / SLOTS
}

/** A slot's requests: how many, and the time of the latest (ms). */
export interface Slot {
  n: number
  last: number
}

/** A bucket's counters: slot index -> its requests. */
export type Counts = Map<number, Slot>

export interface Take {
  allowed: boolean
  /** requests counted in the window after this one (it included, when allowed) */
  used: number
  /** ms until the counted sum drops below what the next request needs (1 ms to the period) */
  resetMs: number
}

/** Whether a slot still counts at `now`: its latest request is inside the window. */
function inWindow (s: Slot, limit: RateLimit, now: number): boolean {
  return s.last + limit.periodMs > now
}

/** The counted slots' sum at `now`; drops the slots that no longer count from `counts`. */
export function counted (counts: Counts, limit: RateLimit, now: number): number {
  let sum = 0
  for (const [slot, s] of counts) {
    if (!inWindow(s, limit, now)) counts.delete(slot)
    else sum += s.n
  }
  return sum
}

/** One request against one bucket. `commit`: count it when allowed (false: only look). */
export function take (counts: Counts, limit: RateLimit, now: number, commit = true): Take {
  const c = Math.floor(now / slotMs(limit))
  const sum = counted(counts, limit, now)
  const allowed = sum + 1 <= limit.count
  if (allowed && commit) counts.set(c, { n: (counts.get(c)?.n ?? 0) + 1, last: now })
  const used = allowed && commit ? sum + 1 : sum
  return { allowed, used, resetMs: resetAfter(counts, limit, now, used) }
}

/**
 * When a request would next be allowed (refused: `used` >= count) or when one more
 * becomes available (allowed): the moment enough of the oldest slots have left the
 * read, each when its latest request leaves the window. At most the period.
 */
export function resetAfter (counts: Counts, limit: RateLimit, now: number, used: number): number {
  const c = Math.floor(now / slotMs(limit))
  const need = Math.max(1, used - limit.count + 1)
  let freed = 0
  for (let s = c - SLOTS; s <= c; s++) {
    const slot = counts.get(s)
    if (slot === undefined) continue
    freed += slot.n
    if (freed >= need) return Math.max(1, slot.last + limit.periodMs - now)
  }
  // nothing counted: the whole window is free
  return limit.periodMs
}

/**
 * A bucket's hash as stored (script.ts): field `<slot>` = requests, `t<slot>` = the
 * latest one's time. A slot without its time (written by an older keygate) counts as
 * if its latest request came at the slot's end.
 */
export function countsOf (flat: Record<string, string>, limit: RateLimit): Counts {
  const slot = slotMs(limit)
  const counts: Counts = new Map()
  for (const [field, value] of Object.entries(flat)) {
    if (field.startsWith('t')) continue
    const s = Number(field)
    const n = Number(value)
    if (!Number.isInteger(s) || !Number.isFinite(n)) continue
    const last = Number(flat[`t${field}`] ?? NaN)
    counts.set(s, { n, last: Number.isFinite(last) ? last : (s + 1) * slot - 1 })
  }
  return counts
}
