/**
 * SSO sessions and sign-ins under way, in Redis, so that every instance honours them
 * and ending one ends it everywhere. A browser holds only a random id (256 bits,
 * base64url); Redis holds the record under the id's SHA-256, so neither a Redis
 * dump nor a key listing hands out a usable session.
 *
 *   <p>session:<sha256>        JSON { user, org, created_at }, expiring with sso.session_ttl
 *   <p>user-sessions:<user>    set of the user's session digests (the user's deactivation or deletion ends
 *                              them); each sign-in drops the digests whose session has expired, so the set
 *                              holds the user's live sessions and those begun since its last sign-in only
 *   <p>sso-login:<sha256>      JSON { state, nonce, verifier }, expiring after LOGIN_TTL_MS, read once (GETDEL)
 */
import { createHash, randomBytes } from 'node:crypto'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'

/** how long a browser may take at the provider's login page */
export const LOGIN_TTL_MS = 10 * 60_000

export interface SessionRecord {
  user: string
  /** the user's org at sign-in: a user moved to another org is refused from then on */
  org: string
  created_at: string
}

/** What a sign-in under way needs at the callback: what openid-client checks the response against. */
export interface PendingLogin {
  state: string
  nonce: string
  verifier: string
}

/** A random id of 256 bits, base64url (43 characters). */
export function randomId (): string {
  return randomBytes(32).toString('base64url')
}

/** what a cookie must hold to be looked up at all: a base64url id of 256 bits */
const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/

function digestOf (id: string): string {
  return createHash('sha256').update(id).digest('hex')
}

export class SessionStore {
  constructor (
    private readonly redis: RegistryClient, private readonly keys: RedisKeys, private readonly ttlMs: number
  ) {}

  /** A new session for `user`; its id, for the cookie. */
  async begin (user: string, org: string, now: number): Promise<string> {
    const id = randomId()
    const digest = digestOf(id)
    const record: SessionRecord = { user, org, created_at: new Date(now).toISOString() }
    const gone = await this.expiredDigests(user)
    const tx = this.redis.multi()
    if (gone.length > 0) tx.srem(this.keys.userSessions(user), ...gone)
    await tx
      .set(this.keys.session(digest), JSON.stringify(record), 'PX', this.ttlMs)
      .sadd(this.keys.userSessions(user), digest)
      .pexpire(this.keys.userSessions(user), this.ttlMs)
      .exec()
    return id
  }

  /** The digests in the user's set whose session record has expired (or was ended elsewhere). */
  private async expiredDigests (user: string): Promise<string[]> {
    const digests = await this.redis.smembers(this.keys.userSessions(user))
    if (digests.length === 0) return []
    const pipeline = this.redis.pipeline()
    for (const d of digests) pipeline.exists(this.keys.session(d))
    const replies = await pipeline.exec() ?? []
    // a failed read keeps its digest: only a session known to be gone is dropped
    return digests.filter((_d, i) => replies[i]?.[0] === null && replies[i]?.[1] === 0)
  }

  /** The session a cookie names; undefined when it names none (expired, ended, malformed). */
  async get (id: string): Promise<SessionRecord | undefined> {
    if (!ID_SHAPE.test(id)) return undefined
    const text = await this.redis.get(this.keys.session(digestOf(id)))
    if (text === null) return undefined
    try {
      const r = JSON.parse(text) as Partial<SessionRecord>
      if (typeof r.user !== 'string' || typeof r.org !== 'string') return undefined
      return { user: r.user, org: r.org, created_at: String(r.created_at) }
    } catch {
      return undefined
    }
  }

  /** Ends one session (sign-out), on every instance. */
  async end (id: string): Promise<void> {
    if (!ID_SHAPE.test(id)) return
    const digest = digestOf(id)
    const r = await this.get(id)
    const tx = this.redis.multi().del(this.keys.session(digest))
    if (r !== undefined) tx.srem(this.keys.userSessions(r.user), digest)
    await tx.exec()
  }

  /** Records a sign-in under way; the id for its cookie. */
  async beginLogin (pending: PendingLogin): Promise<string> {
    const id = randomId()
    await this.redis.set(this.keys.ssoLogin(digestOf(id)), JSON.stringify(pending), 'PX', LOGIN_TTL_MS)
    return id
  }

  /** The sign-in a cookie names, removed as it is read: each is used once at most. */
  async takeLogin (id: string): Promise<PendingLogin | undefined> {
    if (!ID_SHAPE.test(id)) return undefined
    const text = await this.redis.getdel(this.keys.ssoLogin(digestOf(id)))
    if (text === null) return undefined
    try {
      const p = JSON.parse(text) as Partial<PendingLogin>
      if (typeof p.state !== 'string' || typeof p.nonce !== 'string' || typeof p.verifier !== 'string') return undefined
      return { state: p.state, nonce: p.nonce, verifier: p.verifier }
    } catch {
      return undefined
    }
  }
}
