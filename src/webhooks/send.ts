/**
 * One delivery attempt: the body signed by the Standard Webhooks scheme with the
 * endpoint's secret (the `standardwebhooks` library: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), POSTed through an undici Agent whose DNS lookup refuses
 * non-public addresses (targets.ts) unless `allow_private_targets`. A redirect is not
 * followed (it is an answer like any other non-2xx: retried); the attempt has a
 * deadline (`timeout_ms`) and at most `max_response_bytes` of the answer are read.
 */
import { isIP } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { Agent, request } from 'undici'
import { VERSION } from '../version.js'
import { isPrivateAddress, pinnedLookup, urlProblem } from './targets.js'
import type { Attempt } from './deliveries.js'

export interface SendOptions {
  allowPrivate: boolean
  timeoutMs: number
  maxResponseBytes: number
}

export interface Sender {
  send: (target: { url: string, secret: string }, msgId: string, body: string) => Promise<Attempt>
  close: () => Promise<void>
}

export function createSender (o: SendOptions): Sender {
  const agent = new Agent({
    connect: { lookup: pinnedLookup(o.allowPrivate), timeout: o.timeoutMs },
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    keepAliveTimeout: 4_000
  })
  return {
    async send (target, msgId, body) {
      const started = performance.now()
      const at = Date.now()
      const failed = (error: string): Attempt => ({ error, latencyMs: performance.now() - started, at })
      const form = urlProblem(target.url)
      if (form !== undefined) return failed(form)
      const host = new URL(target.url).hostname.replace(/^\[|\]$/g, '')
      if (!o.allowPrivate && isIP(host) !== 0 && isPrivateAddress(host)) return failed('refused: not a public address')
      let signature: string
      try {
        signature = new Webhook(target.secret).sign(msgId, new Date(at), body)
      } catch {
        return failed('the endpoint\'s secret is unusable')
      }
      try {
        const res = await request(target.url, {
          method: 'POST',
          dispatcher: agent,
          body,
          headers: {
            'content-type': 'application/json',
            'user-agent': `keygate-webhooks/${VERSION}`,
            'webhook-id': msgId,
            'webhook-timestamp': String(Math.floor(at / 1000)),
            'webhook-signature': signature
          },
          signal: AbortSignal.timeout(o.timeoutMs)
        })
        const latencyMs = performance.now() - started
        await readCapped(res.body, o.maxResponseBytes)
        return { status: res.statusCode, latencyMs, at }
      } catch (err) {
        return failed(errorText(err))
      }
    },
    async close () {
      await agent.close()
    }
  }
}

/** Reads at most `max` bytes of an answer, then drops the rest (the connection with it). */
async function readCapped (body: AsyncIterable<Buffer> & { destroy: () => unknown }, max: number): Promise<void> {
  let read = 0
  try {
    for await (const chunk of body) {
      read += chunk.length
      if (read > max) {
        body.destroy()
        return
      }
    }
  } catch {
    // the answer's status is what counts; a body cut short changes nothing
  }
}

/** Why an attempt got no answer, in words that name no address of ours nor any secret. */
function errorText (err: unknown): string {
  const e = err as { code?: string, name?: string }
  if (e.code === 'EPRIVATE') return 'refused: resolves to a non-public address'
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e.code === 'UND_ERR_CONNECT_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return 'timeout'
  if (e.code === 'ECONNREFUSED') return 'connection refused'
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return 'the host does not resolve'
  if (typeof e.code === 'string' && /^[A-Z_]+$/.test(e.code)) return `connection failed (${e.code})`
  return 'connection failed'
}
