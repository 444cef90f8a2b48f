/**
 * What a failed Redis command means: Redis unavailable (an outage: 503, never an
 * allow), Redis not answering at all, or a record of the wrong type (a bad record).
 */

/**
 * Error replies that mean "Redis cannot answer this now", never "the record is bad":
 * a registry read that meets one is an outage (503, Redis marked down), never an
 * allow, a deny or a 500. The ones a registry read can meet on a real server:
 *   LOADING      the server is loading its dataset (restart, DEBUG RELOAD, full sync)
 *   BUSY         a script or function has run past busy-reply-threshold
 *   MASTERDOWN   a replica with replica-serve-stale-data no has lost its master
 *   NOPERM       an ACL forbids the read (a misconfiguration: fail closed)
 *   CLUSTERDOWN  the slot's master is lost and not yet replaced (ioredis retries first)
 *   TRYAGAIN     a slot is being migrated (ioredis retries first)
 *   NOAUTH       only on a connection's handshake (a server that started requiring a
 *                password); ioredis then never becomes ready and reads fail fast
 * and, on writes (CLI, usage): READONLY, MISCONF, NOREPLICAS, OOM.
 */
const UNAVAILABLE_REPLIES = new Set([
  'LOADING', 'BUSY', 'MASTERDOWN', 'NOPERM', 'CLUSTERDOWN', 'TRYAGAIN', 'NOAUTH', 'WRONGPASS',
  'READONLY', 'MISCONF', 'NOREPLICAS', 'OOM',
  // a redis:// URL that names a Cluster node: a misconfiguration, so fail closed
  'MOVED', 'ASK'
])

/**
 * The code of an error reply that means Redis is unavailable (`LOADING`, `MASTERDOWN`,
 * ...), also when ioredis wraps it ("Too many Cluster redirections. Last error:
 * ReplyError: CLUSTERDOWN ..."); undefined otherwise.
 */
export function unavailableReply (err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined
  const m = /(?:^|ReplyError: )([A-Z]+)(?: |$)/.exec(err.message)
  return m !== null && UNAVAILABLE_REPLIES.has(m[1] as string) ? m[1] : undefined
}

export function isUnavailableReply (err: unknown): boolean {
  return unavailableReply(err) !== undefined
}

/**
 * ioredis's messages when Redis did not answer at all (refused, unresolvable, closed,
 * not writable, timed out, retries exhausted).
 */
const NO_ANSWER = /Stream isn't writeable|enableOfflineQueue|Connection is closed|Command timed out|ETIMEDOUT|ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|EAI_AGAIN|is disconnected|isn't ready|max retries/i

export function redisDidNotAnswer (err: unknown): boolean {
  return err instanceof Error && NO_ANSWER.test(err.message)
}

/** Redis answered, but a record is not a hash (e.g. written with SET): `WRONGTYPE`, also inside a script error. */
export function isWrongTypeReply (err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError' && err.message.includes('WRONGTYPE')
}

/**
 * How a failed registry read is answered: a record of the wrong type is a bad record
 * (deny, like any record keygate cannot interpret); everything else (an unavailable
 * reply, a timeout, a closed connection, an unexpected script error) is an outage:
 * mark Redis down, serve what the stale window allows, else 503. Never a 500.
 */
export function registryErrorKind (err: unknown): 'bad_record' | 'unavailable' {
  return isWrongTypeReply(err) ? 'bad_record' : 'unavailable'
}
