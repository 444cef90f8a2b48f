/**
 * What the fuzz tests hold every answer to (the error catalogue, the identity headers and the path policy: docs/errors.md, docs/security.md): an answer of
 * the gateway's own is one of the catalogue's, with its exact body, content type, request
 * id and challenge; nothing is a 500; and no key, in any percent-encoding, is in a log
 * line. Each check throws (fuzz.ts expect()) with what it found.
 */
import { ERRORS, errorBody, JSON_CONTENT_TYPE, type ErrorCode } from '../../src/errors.js'
import { expect } from './fuzz.js'
import type { RawResponse } from './raw-http.js'

/** the data plane's and the authorizer's own answers: the catalogue without 409 (admin only) and 500 (never) */
const GATEWAY_CODES = new Map<number, ErrorCode>(
  (Object.keys(ERRORS) as ErrorCode[])
    .filter((c) => c !== 'conflict' && c !== 'internal_error')
    .map((c) => [ERRORS[c].status, c])
)

/** `res` is an error of the catalogue: the status, its exact body, the content type, a request id, the challenge. */
export function expectCatalogueError (res: RawResponse, what: string, isHead = false): void {
  const code = GATEWAY_CODES.get(res.status)
  const body = JSON.stringify(res.body.slice(0, 200))
  expect(code !== undefined, `${what}: status ${res.status} is none of the contract's errors (body ${body})`)
  if (!isHead) {
    expect(res.body === errorBody(code),
    `${what}: the body of ${res.status} is not the catalogue's: ${body}`)
  }
  const type = res.headers['content-type']
  expect(type === JSON_CONTENT_TYPE, `${what}: content type ${String(type)}`)
  expect(/^[0-9a-f-]{36}$/.test(res.headers['x-request-id'] ?? ''), `${what}: no X-Request-Id on ${res.status}`)
  const challenge = res.headers['www-authenticate'] ?? ''
  const wrong = `${what}: ${res.status} challenge ${JSON.stringify(challenge)}`
  if (res.status === 401) expect(/^Bearer realm="keygate"(, error="invalid_token")?$/.test(challenge), wrong)
  if (res.status === 403) expect(/^Bearer realm="keygate", error="insufficient_scope"/.test(challenge), wrong)
}

/** The secret part of a key (what follows the id), and the whole key. */
function secretsOf (key: string): string[] {
  const underscore = key.indexOf('_', key.indexOf('_') + 1)
  return underscore === -1 ? [key] : [key, key.slice(underscore + 1)]
}

/** `text` decoded again and again until it stops changing (at most eight rounds), every round kept. */
function decodings (text: string): string[] {
  const out = [text]
  let current = text
  for (let i = 0; i < 8 && current.includes('%'); i++) {
    let next: string
    try {
      next = decodeURIComponent(current)
    } catch {
      next = current.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    }
    if (next === current) break
    out.push(next)
    current = next
  }
  return out
}

/** No log line holds a key's secret, as written or in any depth of percent-encoding (JSON escapes read). */
export function expectNoKeyInLogs (lines: readonly string[], keys: readonly string[], what: string): void {
  const secrets = keys.flatMap(secretsOf).filter((s) => s.length >= 16)
  for (const line of lines) {
    // (JSON's \\u escapes read)
    const unescaped = line.replace(/\\u([0-9a-fA-F]{4})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    for (const text of [line, ...decodings(unescaped)]) {
      for (const secret of secrets) {
        expect(!text.includes(secret), `${what}: a key's secret is in a log line: ${line.slice(0, 300)}`)
      }
    }
  }
}
