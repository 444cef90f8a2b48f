/**
 * POST /hooks/github/secret-scanning: GitHub's secret scanning partner reports, on the
 * admin listener, without an admin credential: a report counts only when GitHub signed
 * it (github-keys.ts). In the order a request meets it:
 *
 *   1. headers    no `Github-Public-Key-Identifier` or `-Signature`: 401, body unread
 *   2. the body   read raw, at most MAX_BODY_BYTES (else 413)
 *   3. signature  over the raw body, by the key the identifier names: else 401 (503
 *                 while GitHub's key list was never fetched); nothing changed
 *   4. the report a JSON array of at most MAX_TOKENS `{token, type, url, source}`: else 400
 *   5. revoke     each live keygate key, one change each (src/admin/actions/leaks.ts)
 *   6. answer     200, GitHub's feedback: per token its SHA-256, its type, and its label
 *
 * Nothing about a key is told beyond the label. Reference: docs/leaks.md.
 */
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sendError } from '../../errors.js'
import type { AdminActions } from '../actions/index.js'
import type { Logger } from 'pino'
import type { GithubKeys } from './github-keys.js'

export const HOOK_PATH = '/hooks/github/secret-scanning'
/** a report's raw body, at most */
export const MAX_BODY_BYTES = 1024 * 1024
/** tokens in one report, at most */
export const MAX_TOKENS = 1000
/** a reported token's length, at most (a keygate key is far shorter) */
const MAX_TOKEN_LENGTH = 1024
const IDENTIFIER = /^[A-Za-z0-9_-]{1,256}$/

interface Reported { token: string, type: string, url?: string | undefined, source?: string | undefined }

export interface GithubHookOptions {
  keys: GithubKeys
  /** the admin actions of `scanner:github` */
  actions: AdminActions
  logger: Logger
}

export async function githubHook (app: FastifyInstance, o: GithubHookOptions): Promise<void> {
  await app.register(async (scope) => {
    // the raw bytes, as GitHub signed them: no parser may touch them first
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES },
      (_request, body, done) => { done(null, body) }
    )

    scope.post(HOOK_PATH, {
      bodyLimit: MAX_BODY_BYTES,
      onRequest: (request, reply, done) => {
        if (signatureHeaders(request) === undefined) {
          sendError(reply, 'unauthorized')
          return
        }
        done()
      }
    }, async (request, reply) => await handle(o, request, reply))
  })
}

function signatureHeaders (request: FastifyRequest): { identifier: string, signature: string } | undefined {
  const identifier = request.headers['github-public-key-identifier']
  const signature = request.headers['github-public-key-signature']
  if (
    typeof identifier !== 'string' || typeof signature !== 'string' || !IDENTIFIER.test(identifier) || signature === ''
  ) return undefined
  return { identifier, signature }
}

async function handle (o: GithubHookOptions, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const headers = signatureHeaders(request)
  if (headers === undefined) return sendError(reply, 'unauthorized')
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
  const check = await o.keys.check(headers.identifier, headers.signature, body)
  if (check !== 'valid') {
    o.logger.warn(
      { req_id: request.id, key_identifier: headers.identifier, result: check },
      'secret scanning report refused'
    )
    return sendError(reply, check === 'unavailable' ? 'service_unavailable' : 'unauthorized')
  }
  const reported = parseReport(body)
  if (reported === undefined) return sendError(reply, 'bad_request')
  const outcomes = await o.actions.reportLeaked(reported.map((r) => ({
    token: r.token,
    source: r.url ?? `github ${r.source ?? 'secret scanning'}`
  })))
  o.logger.info({
    req_id: request.id,
    tokens: reported.length,
    true_positive: outcomes.filter((x) => x.label === 'true_positive').length,
    revoked: outcomes.flatMap((x) => x.revoked === true && x.id !== undefined ? [x.id] : [])
  }, 'secret scanning report')
  return await reply.code(200).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(
    reported.map((r, i) => ({
      token_hash: createHash('sha256').update(r.token).digest('hex'),
      token_type: r.type,
      label: outcomes[i]?.label ?? 'false_positive'
    }))
  ))
}

/** GitHub's report: a JSON array of `{token, type, url, source}`; undefined when it is not one. */
export function parseReport (body: Buffer): Reported[] | undefined {
  let value: unknown
  try {
    value = JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
  if (!Array.isArray(value) || value.length > MAX_TOKENS) return undefined
  const out: Reported[] = []
  for (const item of value as unknown[]) {
    if (typeof item !== 'object' || item === null) return undefined
    const { token, type, url, source } = item as Record<string, unknown>
    if (
      typeof token !== 'string' || token === '' || token.length > MAX_TOKEN_LENGTH ||
      typeof type !== 'string' || type.length > 256
    ) return undefined
    if ((url !== undefined && typeof url !== 'string') || (source !== undefined && typeof source !== 'string')) {
      return undefined
    }
    out.push({ token, type, url, source })
  }
  return out
}
