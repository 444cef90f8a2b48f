/**
 * `POST /v1/verify` on the authorizer listener (docs/verify.md): a service that does not
 * sit behind keygate asks whether a key is valid and may do what it asks. In the order a
 * request meets it:
 *
 *   1. the caller   its own `Authorization: Bearer` key, granted `keygate:keys:verify`
 *                   by name: 401 / 403 / 429 / 503, the body unread    src/decision/verify-key.ts
 *   2. the body     JSON, at most MAX_BODY_BYTES: `{"key","permissions"?,"cost"?}`;
 *                   anything else 400 with `details` (413 past the bound)
 *   3. the key      the gateway's decision on it, through the same cache
 *   4. the answer   200 `{"valid":true,...}` or `{"valid":false,"code"}`; 503 when
 *                   the registry cannot decide (fail closed)
 *
 * One log line per call (`mode: "authz"`): the caller's key id, and the decision on the
 * verified key as its reason; the verified key counts in its own usage (docs/usage.md).
 * The key itself is never logged: the body is never, and a key-shaped value anywhere
 * else is refused by the log's own rules.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ERRORS, JSON_CONTENT_TYPE } from '../errors.js'
import { PERMISSION_PATTERN } from '../config/permission.js'
import type { Allowed, Verdict } from '../decision/verdict.js'
import { VERIFY_PATH, type KeyVerifier } from '../decision/verify-key.js'
import { applyVerdict } from '../http/verdict.js'
import { deny } from '../http/deny.js'
import type { UsageCounter } from '../usage/counter.js'
import type { UsageRecorder } from '../usage/last-used.js'

/** a verify request's body, at most */
export const MAX_BODY_BYTES = 16 * 1024

const Body = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 512 }),
  permissions: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 64 })),
  cost: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 }))
}, { additionalProperties: false })
const checkBody = TypeCompiler.Compile(Body)
const PERMISSION = new RegExp(PERMISSION_PATTERN)

export interface VerifyRouteOptions {
  verifier: KeyVerifier
  usage: UsageRecorder
  counter?: UsageCounter | undefined
}

interface Detail { field: string, reason: string }

/** The problems of a body (none: it is a question), each with its field; never the key's value. */
export function bodyProblems (body: unknown): Detail[] {
  if (!checkBody.Check(body)) {
    return [...checkBody.Errors(body)].slice(0, 10).map((e) => ({
      field: e.path === '' ? 'body' : e.path.slice(1).replaceAll('/', '.'),
      reason: e.message
    }))
  }
  const details: Detail[] = []
  ;(body as Static<typeof Body>).permissions?.forEach((p, i) => {
    if (!PERMISSION.test(p)) {
      details.push({ field: `permissions.${i}`, reason: 'expected resource:action, in lower case' })
    }
  })
  return details
}

/** 1. the caller, in the listener's first hook: refused, the answer is sent and the body never read */
export function decideCaller (
  verifier: KeyVerifier, request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void
): void {
  const now = Date.now()
  const v = verifier.caller(request.raw.rawHeaders, request.kg.clientIp, now)
  const go = (verdict: Verdict): void => {
    const allowed = applyVerdict(reply, verdict)
    // (the caller's stand-in rule is no configured rule: no rule on its log line or metrics)
    request.kg.rule = undefined
    if (allowed) {
      done()
      return
    }
    reply.header('connection', 'close')
  }
  if (!(v instanceof Promise)) return go(v)
  v.then(go, (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) })
}

export async function verifyRoute (app: FastifyInstance, o: VerifyRouteOptions): Promise<void> {
  app.post(VERIFY_PATH, { bodyLimit: MAX_BODY_BYTES }, async (request, reply) => {
    const details = bodyProblems(request.body)
    if (details.length > 0) {
      request.kg.reason = 'bad_request'
      const { status, message } = ERRORS.bad_request
      return reply.code(status).header('content-type', JSON_CONTENT_TYPE).header('x-request-id', request.id)
        .send(JSON.stringify({ error: { code: 'bad_request', message, status, details } }))
    }
    const body = request.body as Static<typeof Body>
    const now = Date.now()
    const verdict = await o.verifier.verify(
      { key: body.key, permissions: body.permissions ?? [], cost: body.cost }, request.kg.clientIp, now
    )
    return answer(request, reply, verdict, now)
  })

  function answer (request: FastifyRequest, reply: FastifyReply, v: Verdict, now: number): FastifyReply {
    // the registry cannot decide: the caller is told so, never "invalid"
    if (!v.ok && v.code === 'service_unavailable') return deny(reply, 'service_unavailable', v.reason)
    request.kg.reason = v.ok ? 'allowed' : v.reason
    const identity = v.identity
    if (identity !== undefined) {
      // the verified key's own usage: allowed, refused (401/403) or limited (429), as on the data plane
      const status = v.ok ? 200 : ERRORS[v.code].status
      o.counter?.count(identity.keyId, identity.org, status, v.ok ? 'allowed' : v.reason, now)
      if (v.ok) o.usage.record(identity.keyId, now)
    }
    const body = v.ok ? validAnswer(v as Allowed) : { valid: false, code: invalidCode(v) }
    return reply.code(200).header('content-type', JSON_CONTENT_TYPE).header('x-request-id', request.id)
      .header('cache-control', 'no-store').send(JSON.stringify(body))
  }
}

function invalidCode (v: Exclude<Verdict, { ok: true }>): string {
  if (v.reason === 'address_not_allowed') return 'address_not_allowed'
  return v.code === 'forbidden' || v.code === 'rate_limited' || v.code === 'quota_exceeded' ? v.code : 'unauthorized'
}

function validAnswer (v: Allowed): Record<string, unknown> {
  const id = v.identity
  const answer: Record<string, unknown> = { valid: true, key_id: id.keyId, type: id.type, org: id.org }
  if (id.userId !== undefined) answer.user = id.userId
  answer.role = id.role
  if (id.identityId !== undefined) answer.identity = { id: id.identityId, external_id: id.externalId }
  answer.permissions = [...id.grants.permissions]
  // the key's meta over its identity's, as the upstream gets it (the caller's to read, never logged)
  if (id.meta !== undefined) answer.meta = id.meta.value
  if (id.expiresAt !== undefined) answer.expires_at = new Date(id.expiresAt).toISOString()
  const allowances = v.quota?.allowed === true ? v.quota.allowances : []
  if (allowances.length > 0) {
    const least = allowances.reduce((a, b) => b.remaining < a.remaining ? b : a)
    answer.quota = { remaining: Math.max(0, least.remaining), reset_s: least.resetS ?? null }
  }
  return answer
}
