/**
 * The fill tickets of push invalidation (invalidation.ts): which invalidations a cache
 * fill in flight must not install over. A fill takes a ticket (the count of names
 * invalidated so far) before it reads; a name invalidated after that may not be
 * installed by it.
 *
 * A name is remembered only while a fill that began before its invalidation is in
 * flight, and forgotten as soon as the oldest such fill ends. Under sustained misses
 * some fill is always in flight, so forgetting only when none is would keep every
 * name invalidated meanwhile (a bulk import during cold traffic: every key).
 */
import type { FillTicket } from './tracking.js'

export class FillTickets {
  /** bumped by every invalidated name */
  private seq = 0
  /** the seq each fill in flight began at -> how many began there; the oldest first (seqs only grow) */
  private readonly fills = new Map<number, number>()
  /** name -> seq of its latest invalidation, in seq order */
  private readonly recent = new Map<string, number>()

  begin (tracked: boolean, epoch: number): FillTicket {
    const seq = this.seq
    this.fills.set(seq, (this.fills.get(seq) ?? 0) + 1)
    return { tracked, epoch, seq }
  }

  /** `name` changed: no fill in flight may install it */
  invalidated (name: string): void {
    this.seq++
    if (this.fills.size === 0) return
    // (deleted first, so the map stays in seq order)
    this.recent.delete(name)
    this.recent.set(name, this.seq)
  }

  /** nothing invalidated `name` since `ticket` was taken (the epoch is the tracker's) */
  unchanged (ticket: FillTicket, name: string): boolean {
    const invalidated = this.recent.get(name)
    return invalidated === undefined || invalidated <= ticket.seq
  }

  end (ticket: FillTicket): void {
    const left = (this.fills.get(ticket.seq) ?? 1) - 1
    if (left > 0) {
      this.fills.set(ticket.seq, left)
      return
    }
    const wasOldest = this.fills.keys().next().value === ticket.seq
    this.fills.delete(ticket.seq)
    if (!wasOldest) return
    // an invalidation no later than the oldest fill still in flight (every one, when none is) refuses no install
    const oldest = this.fills.keys().next().value ?? Number.POSITIVE_INFINITY
    for (const [name, seq] of this.recent) {
      if (seq > oldest) break
      this.recent.delete(name)
    }
  }

  /** how many invalidated names are remembered for the fills in flight */
  get remembered (): number {
    return this.recent.size
  }
}
