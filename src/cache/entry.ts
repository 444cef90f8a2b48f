/** One cached record, as the record store (record-cache.ts) and its tables hold it. */

/** A record that does not exist in Redis is cached too (negative entry). */
export type Cached<T> = T | null

export interface Entry<T> {
  value: Cached<T>
  /** when the fetch that filled it was issued (epoch ms) */
  at: number
  /** filled while push invalidation was established: valid until invalidated */
  tracked: boolean
  /** looked up since the eviction scan last passed it (CLOCK) */
  used: boolean
}
