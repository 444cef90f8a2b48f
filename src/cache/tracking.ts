/**
 * What the cache's readers know of push invalidation (invalidation.ts): whether it is
 * up and as of when the cache agrees with Redis, the fill tickets that keep a raced
 * write from being installed, and the changes it reports. NO_TRACKING: none.
 */

/** A record's cache name (record-cache.ts) that changed; undefined: any record may have. */
export type ChangeListener = (name: string | undefined) => void
/** What the resolver needs to know about tracking, and the fill tickets. */
export interface Tracking {
  /** the channel is established (tracked entries may be fresh) */
  readonly up: boolean
  /** the cache agrees with Redis as of this moment (epoch ms): the last answered ping */
  readonly verifiedAt: number
  /** when tracking was last established (epoch ms); 0 while down */
  readonly since: number
  beginFill: () => FillTicket
  mayInstall: (ticket: FillTicket, name: string) => boolean
  /** the fill that `ticket` began has ended (installed or not) */
  endFill: (ticket: FillTicket) => void
  /** `listener` hears of every change push invalidation reports, once the cache dropped what changed */
  onChange: (listener: ChangeListener) => void
}

export interface FillTicket {
  /** the fill started while tracking was up: what it installs is tracked */
  tracked: boolean
  epoch: number
  seq: number
}

/** No push invalidation (`cache.tracking: false`): every entry lives by its TTL. */
export const NO_TRACKING: Tracking = {
  up: false,
  verifiedAt: Number.NEGATIVE_INFINITY,
  since: 0,
  beginFill: () => ({ tracked: false, epoch: 0, seq: 0 }),
  mayInstall: () => true,
  endFill: () => {},
  onChange: () => {}
}
