/**
 * A user's keys are bounded (docs/registry.md#key-records-are-bounded): at most
 * `keys.max_per_user` live ones (a creation past it is a conflict, 409), and a dead key's
 * record is dropped `keys.purge_after` after its end, by the next key creation for the
 * same user (no background job: what grows is only what creations add).
 */
import { AdminError } from '../model/errors.js'
import type { OwnedKeyState } from '../store/key-bounds.js'

/** Refuses `adding` new keys (a creation: 1; an import: its keys for that owner) past `max` live ones. */
export function decideKeyCount (owner: string, owned: readonly OwnedKeyState[], max: number, adding = 1): void {
  const live = owned.filter((k) => k.live).length
  if (live + adding <= max) return
  const why = `user "${owner}" owns ${live} live keys, the most keys.max_per_user allows; revoke one first`
  throw new AdminError(why, 'conflict', undefined, [{ field: 'user', reason: why }])
}

/** The dead keys whose end is at least `purgeAfterMs` ago (an end not known: kept). */
export function keysToPurge (owned: readonly OwnedKeyState[], purgeAfterMs: number, now: number): OwnedKeyState[] {
  return owned.filter((k) => !k.live && k.endedAt !== undefined && k.endedAt + purgeAfterMs <= now)
}
