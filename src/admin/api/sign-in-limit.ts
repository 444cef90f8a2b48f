/**
 * Failed admin sign-ins, limited per peer address: after `perMinute` failures within
 * a minute (the window opens at the peer's first failure), every attempt from that
 * peer gets 429 with Retry-After until the window closes, before its credential is
 * looked up. An attempt counts from the moment it starts, before its lookup, until
 * it turns out not to have failed: attempts in flight count, so a peer that sends 60
 * at once has at most `perMinute` of them evaluated. A successful sign-in neither
 * counts nor resets the window, so a peer holding one valid key cannot interleave it
 * to keep guessing.
 *
 * The caller keeps one limit per kind of credential (admin/api/index.ts): the admin
 * token's failures and key failures are counted apart.
 *
 * In process, per instance. Memory is bounded: at most `maxPeers` peers are tracked;
 * when full, closed windows are dropped first, then the oldest. (Not an LRU: a peer
 * still failing must keep its open window while closed ones remain to be dropped.)
 */

const WINDOW_MS = 60_000

export interface SignInLimitOptions {
  perMinute: number
  /** the most peers tracked at once (default 10,000) */
  maxPeers?: number
  now?: () => number
}

/** One attempt, counted from its start: say how it ended. */
export interface SignInAttempt {
  /** it failed (a 401 for a credential that was sent): it stays counted in the window */
  failed: () => void
  /** it did not fail (signed in, 403, 503): it no longer counts */
  passed: () => void
}

export interface SignInLimit {
  /**
   * Counts an attempt from `peer`, now, before its credential is looked up; or, when
   * the peer's failures and attempts in flight already reach the limit, the whole
   * seconds until it may try again (>= 1).
   */
  attempt: (peer: string) => SignInAttempt | number
  /** peers tracked now */
  size: () => number
}

interface Window {
  /** when the first failure of the window was counted; 0: none yet */
  opened: number
  failures: number
  inFlight: number
}

export function createSignInLimit (o: SignInLimitOptions): SignInLimit {
  const maxPeers = o.maxPeers ?? 10_000
  const now = o.now ?? Date.now
  // insertion order = the order peers were first seen: the first entry is the oldest
  const windows = new Map<string, Window>()

  /** the peer's window, its failures cleared once its minute is over */
  function current (peer: string, t: number): Window | undefined {
    const w = windows.get(peer)
    if (w === undefined) return undefined
    if (w.failures > 0 && t - w.opened >= WINDOW_MS) {
      w.failures = 0
      w.opened = 0
    }
    if (w.failures === 0 && w.inFlight === 0) {
      windows.delete(peer)
      return undefined
    }
    return w
  }

  /**
   * Room for one more peer: closed windows go first, then open ones that block nothing
   * (below the limit, nothing in flight), oldest first. A blocked window is never
   * forgotten (a flood of new addresses would otherwise unblock a guesser): with every
   * window blocked, the seconds until the oldest closes; undefined: room made.
   */
  function makeRoom (t: number): number | undefined {
    for (const [peer, w] of windows) {
      if (windows.size < maxPeers) return undefined
      if (w.inFlight === 0 && (w.failures === 0 || t - w.opened >= WINDOW_MS)) windows.delete(peer)
    }
    for (const [peer, w] of windows) {
      if (windows.size < maxPeers) return undefined
      if (w.inFlight === 0 && w.failures < o.perMinute) windows.delete(peer)
    }
    if (windows.size < maxPeers) return undefined
    const oldest = Math.min(...[...windows.values()].map((w) => w.opened === 0 ? t : w.opened))
    return Math.max(1, Math.ceil((oldest + WINDOW_MS - t) / 1000))
  }

  return {
    attempt (peer) {
      const t = now()
      let w = current(peer, t)
      if (w !== undefined && w.failures + w.inFlight >= o.perMinute) {
        // the failures of the window, or attempts still in flight that may become some
        return w.failures >= o.perMinute ? Math.max(1, Math.ceil((w.opened + WINDOW_MS - t) / 1000)) : 1
      }
      if (w === undefined) {
        const wait = makeRoom(t)
        if (wait !== undefined) return wait
        w = { opened: 0, failures: 0, inFlight: 0 }
        windows.set(peer, w)
      }
      w.inFlight++
      const window = w
      let ended = false
      return {
        failed () {
          if (ended) return
          ended = true
          window.inFlight--
          const at = now()
          if (window.failures === 0 || at - window.opened >= WINDOW_MS) {
            window.failures = 0
            window.opened = at
          }
          window.failures++
        },
        passed () {
          if (ended) return
          ended = true
          window.inFlight--
          if (window.failures === 0 && window.inFlight === 0 && windows.get(peer) === window) windows.delete(peer)
        }
      }
    },
    size: () => windows.size
  }
}
