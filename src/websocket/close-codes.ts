/** The gateway's own closes of a WebSocket connection (connections.ts): code and reason. */

/** Close codes of the gateway's own closes (RFC 6455 section 7.4.1, IANA registry). */
export const CLOSE = {
  policyViolation: 1008,
  goingAway: 1001,
  tryAgainLater: 1013
} as const
export const CLOSE_REASON = {
  refused: 'authorization no longer valid',
  unavailable: 'authorization cannot be checked',
  shutdown: 'gateway shutting down'
} as const
