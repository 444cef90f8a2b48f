/**
 * Failed admin sign-ins, limited per peer address: after `perMinute` failures within
 * a minute (the window opens at the peer's first failure), every request from that
 * peer gets 429 with Retry-After until the window closes, before any credential is
 * read. Only failures count: a successful sign-in neither counts nor resets the
 * window, so a peer holding one valid key cannot interleave it to keep guessing.
 *
 * In process, per instance. Memory is bounded: at most `maxPeers` peers are tracked;
 * when full, closed windows are dropped first, then the oldest.
 */

const WINDOW_MS = 60_000

export interface SignInLimitOptions {
  perMinute: number
  /** the most peers tracked at once (default 10,000) */
  maxPeers?: number
  now?: () => number
}

export interface SignInLimit {
  /** whole seconds until `peer` may try again (>= 1), or 0 if it may try now */
  retryAfter: (peer: string) => number
  /** a failed sign-in from `peer` */
  failed: (peer: string) => void
  /** peers tracked now */
  size: () => number
}

interface Window {
  opened: number
  failures: number
}

export function createSignInLimit (o: SignInLimitOptions): SignInLimit {
  const maxPeers = o.maxPeers ?? 10_000
  const now = o.now ?? Date.now
  // insertion order = the order windows opened: the first entry is the oldest
  const windows = new Map<string, Window>()

  function open (peer: string, t: number): Window | undefined {
    const w = windows.get(peer)
    if (w === undefined) return undefined
    if (t - w.opened >= WINDOW_MS) {
      windows.delete(peer)
      return undefined
    }
    return w
  }

  function makeRoom (t: number): void {
    for (const [peer, w] of windows) {
      if (windows.size < maxPeers) return
      if (t - w.opened >= WINDOW_MS) windows.delete(peer)
    }
    while (windows.size >= maxPeers) {
      const oldest = windows.keys().next()
      if (oldest.done === true) return
      windows.delete(oldest.value)
    }
  }

  return {
    retryAfter (peer) {
      const t = now()
      const w = open(peer, t)
      if (w === undefined || w.failures < o.perMinute) return 0
      return Math.max(1, Math.ceil((w.opened + WINDOW_MS - t) / 1000))
    },
    failed (peer) {
      const t = now()
      const w = open(peer, t)
      if (w !== undefined) {
        w.failures++
        return
      }
      makeRoom(t)
      windows.set(peer, { opened: t, failures: 1 })
    },
    size: () => windows.size
  }
}
