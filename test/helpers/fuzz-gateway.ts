/**
 * The gateway the fuzz tests of the data plane and the authorizer send to: the default
 * test rules plus a catch-all (`* /api/v1/*`, any valid key), so that most accepted targets
 * are forwarded and their path can be compared; the authorizer listener on; and the keys
 * a credential is drawn from (fuzz-headers.ts): a live personal key whose role grants every
 * permission (`admin`: `*`), a revoked one, and one never issued.
 */
import type { Test } from 'tap'
import fc from 'fast-check'
import { generateKey } from '../../src/registry/key-format.js'
import type { Credentials } from './fuzz-headers.js'
import { startGateway, type LogLine, type TestGateway } from './gateway.js'
import type { RawResponse } from './raw-http.js'
import type { RecordedRequest } from './upstream.js'

export const FUZZ_RULES = `
authz_listen: "127.0.0.1:0"
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [orgs:read], org_param: org }
  - { method: "*",  path: /api/v1/*,            permissions: [] }
`

export interface FuzzWorld {
  gw: TestGateway
  credentials: Credentials
  /** the live key's id, and the identity headers the upstream must get for it (lower-case names) */
  validId: string
  identity: Record<string, string>
  /** every key a log line must never hold */
  keys: string[]
}

export async function fuzzWorld (t: Test): Promise<FuzzWorld> {
  const gw = await startGateway(t, { yaml: FUZZ_RULES })
  await gw.fixtures.user('root', 'acme', 'admin')
  const valid = await gw.fixtures.personalKey('root')
  const revoked = await gw.fixtures.personalKey('root')
  await gw.fixtures.admin.revokeKey(revoked.id)
  const unknown = generateKey(gw.config.keys.prefix).key
  return {
    gw,
    credentials: { valid: valid.key, revoked: revoked.key, unknown },
    validId: valid.id,
    identity: {
      'x-auth-key-id': valid.id,
      'x-auth-key-type': 'personal',
      'x-auth-user-id': 'root',
      'x-auth-org-id': 'acme',
      'x-auth-role': 'admin',
      'x-auth-env': 'live'
    },
    keys: [valid.key, revoked.key, unknown]
  }
}

/** A credential for a request: the live key (twice as often), a revoked or unknown one, or none. */
export function credentialChoice (c: Credentials): fc.Arbitrary<['valid' | 'refused' | 'none', string | undefined]> {
  return fc.constantFrom<['valid' | 'refused' | 'none', string | undefined]>(
    ['valid', c.valid], ['valid', c.valid], ['refused', c.revoked], ['refused', c.unknown], ['none', undefined]
  )
}

/** What one request did: its answer, the upstream's requests it caused, its log lines. */
export interface Observed {
  res: RawResponse
  forwarded: RecordedRequest[]
  /** the log line of its request id (undefined when none was written) */
  line: LogLine | undefined
  /** every log line written meanwhile, as written */
  rawLines: string[]
}

/** Sends `bytes` with `send` and collects what it caused (one request at a time). */
export async function observe (gw: TestGateway, send: () => Promise<RawResponse>): Promise<Observed> {
  const upstreamBefore = gw.upstream.requests.length
  const logsBefore = gw.rawLogs.length
  const res = await send()
  const line = res.headers['x-request-id'] === undefined ? undefined : await gw.logOf(res)
  // the request log is written in batches at least every 100 ms (src/http/request-log.ts)
  if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 120))
  return { res, forwarded: gw.upstream.requests.slice(upstreamBefore), line, rawLines: gw.rawLogs.slice(logsBefore) }
}
