/**
 * The cache's negative entries: names of records that do not exist in Redis. They
 * live apart from the records, under their own bound (`cache.negative_max_entries`),
 * because anyone can mint them: every well-formed key id that was never issued is
 * one more. Held here, a flood of them only ever evicts other negative entries,
 * never a cached key, user or role.
 *
 * Eviction is CLOCK, as for the records (record-cache.ts): an entry looked up since
 * the scan last passed it gets a second chance, so an unknown key a client keeps
 * retrying stays cached while a flood of one-off ids streams through.
 */
import type { Entry } from './entry.js'

export class NegativeStore {
  /** cache name (`k:<id>`, `u:<id>`, `r:<name>`) -> entry, oldest first */
  private readonly entries = new Map<string, Entry<null>>()

  constructor (private readonly maxEntries: number, private readonly maxSecondChances: number) {}

  get size (): number {
    return this.entries.size
  }

  /** The entry for a name, marked used (CLOCK). */
  get (name: string): Entry<null> | undefined {
    const entry = this.entries.get(name)
    if (entry !== undefined && !entry.used) entry.used = true
    return entry
  }

  /** Stores or replaces a negative entry; true when another one was evicted for room. */
  set (name: string, at: number, tracked: boolean): boolean {
    const entry = this.entries.get(name)
    if (entry !== undefined) {
      entry.at = at
      entry.tracked = tracked
      return false
    }
    const evicted = this.entries.size >= this.maxEntries && this.evictOne()
    this.entries.set(name, { value: null, at, tracked, used: false })
    return evicted
  }

  delete (name: string): void {
    this.entries.delete(name)
  }

  clear (): void {
    this.entries.clear()
  }

  private evictOne (): boolean {
    let chances = this.maxSecondChances
    for (const [name, entry] of this.entries) {
      this.entries.delete(name)
      if (entry.used && chances-- > 0) {
        entry.used = false
        this.entries.set(name, entry)
        continue
      }
      return true
    }
    return false
  }
}
