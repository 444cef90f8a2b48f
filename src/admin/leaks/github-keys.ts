/**
 * GitHub's secret scanning public keys, and the check of a report's signature against
 * them. GitHub lists its keys at `leaks.github.keys_url` as
 *
 *   {"public_keys":[{"key_identifier":"<hex>","key":"-----BEGIN PUBLIC KEY-----...","is_current":true}]}
 *
 * and signs each report with one of them: `Github-Public-Key-Identifier` names the key,
 * `Github-Public-Key-Signature` is the base64 DER ECDSA signature (P-256, SHA-256) of
 * the raw body. The list is fetched when first needed and kept; an identifier it does
 * not hold fetches it again, at most once a minute (so forged identifiers cannot make
 * keygate hammer GitHub), and a list older than an hour is fetched again on the next
 * report. Only P-256 keys are kept.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto'
import { fetch } from 'undici'

/** an unknown identifier fetches the list again at most this often */
export const REFETCH_EVERY_MS = 60_000
/** a list this old is fetched again on the next report */
export const LIST_MAX_AGE_MS = 60 * 60_000
/** the key list is small; anything larger is not GitHub's */
const LIST_MAX_BYTES = 256 * 1024

export type SignatureCheck = 'valid' | 'invalid' | 'unavailable'

export interface GithubKeys {
  /**
   * Whether `signature` (base64 DER) over `body` is by the key `identifier` names; `unavailable`: the list cannot be
   * fetched.
   */
  check: (identifier: string, signature: string, body: Buffer) => Promise<SignatureCheck>
}

export function createGithubKeys (o: { url: string, timeoutMs: number, now?: () => number }): GithubKeys {
  const now = o.now ?? Date.now
  let keys = new Map<string, KeyObject>()
  let fetchedAt: number | undefined
  let attemptedAt: number | undefined
  let inFlight: Promise<void> | undefined

  async function load (): Promise<void> {
    attemptedAt = now()
    const res = await fetch(o.url, {
      signal: AbortSignal.timeout(o.timeoutMs), headers: { accept: 'application/json' }
    })
    const text = await res.text()
    if (res.status !== 200 || text.length > LIST_MAX_BYTES) throw new Error(`GitHub's key list answered ${res.status}`)
    keys = parseKeyList(JSON.parse(text) as unknown)
    fetchedAt = now()
  }

  /** One fetch at a time; every report waiting for it shares it. */
  async function refresh (): Promise<boolean> {
    inFlight ??= load().finally(() => { inFlight = undefined })
    try {
      await inFlight
      return true
    } catch {
      return false
    }
  }

  return {
    async check (identifier, signature, body) {
      const stale = fetchedAt === undefined || now() - fetchedAt >= LIST_MAX_AGE_MS
      const mayFetch = attemptedAt === undefined || now() - attemptedAt >= REFETCH_EVERY_MS
      let fetchFailed = false
      if ((stale || !keys.has(identifier)) && (mayFetch || inFlight !== undefined)) fetchFailed = !await refresh()
      const key = keys.get(identifier)
      if (key === undefined) return fetchFailed && fetchedAt === undefined ? 'unavailable' : 'invalid'
      const sig = decodeBase64(signature)
      if (sig === undefined) return 'invalid'
      try {
        return verify('sha256', body, { key, dsaEncoding: 'der' }, sig) ? 'valid' : 'invalid'
      } catch {
        return 'invalid'
      }
    }
  }
}

/** GitHub's list: each entry with a string identifier and a P-256 public key in PEM; others are skipped. */
export function parseKeyList (list: unknown): Map<string, KeyObject> {
  const out = new Map<string, KeyObject>()
  const entries = (list as { public_keys?: unknown } | null)?.public_keys
  if (!Array.isArray(entries)) throw new Error('GitHub\'s key list has no public_keys array')
  for (const entry of entries as unknown[]) {
    const { key_identifier: id, key: pem } = (entry ?? {}) as { key_identifier?: unknown, key?: unknown }
    if (typeof id !== 'string' || typeof pem !== 'string') continue
    try {
      const key = createPublicKey(pem)
      if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') out.set(id, key)
    } catch {}
  }
  return out
}

/** Strict base64 (a DER ECDSA signature is at most 72 bytes); undefined when it is not. */
function decodeBase64 (text: string): Buffer | undefined {
  if (text.length > 128 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined
  return Buffer.from(text, 'base64')
}
