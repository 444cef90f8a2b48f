/**
 * What a client sees of keygate's refusals through a forward-auth proxy (nginx
 * auth_request, Caddy forward_auth): the requests each proxy's test sends, and the
 * checks on each answer, shared so both proxies are held to the same table.
 */
import type { Test } from 'tap'
import type { TestGateway } from './gateway.js'
import type { RawResponse } from './raw-http.js'

export type Via = (method: string, target: string, headers?: Record<string, string>, body?: string) => Promise<RawResponse>

type Case = [name: string, method: string, target: string, headers: Record<string, string>, status: number, code: string, challenge: string | undefined]

/**
 * The refusals: no key, a malformed one, a missing permission, another org, no route
 * prefix, path attacks. `extra` adds a proxy's own cases; names may say why a case
 * matters for that proxy.
 */
export async function checkRefusalsThrough (t: Test, gw: TestGateway, via: Via, names: Partial<Record<string, string>> = {}, extra: (bearer: string) => Case[] = () => []): Promise<void> {
  const alice = `Bearer ${(await gw.fixtures.personalKey('alice')).key}`
  const carol = `Bearer ${(await gw.fixtures.personalKey('carol')).key}`
  const name = (n: string): string => names[n] ?? n
  const cases: Case[] = [
    [name('no key'), 'GET', '/api/v1/users', {}, 401, 'unauthorized', 'Bearer realm="keygate"'],
    [name('a malformed key'), 'GET', '/api/v1/users', { Authorization: 'Bearer kg_nope' }, 401, 'unauthorized', 'Bearer realm="keygate", error="invalid_token"'],
    [name('a missing permission'), 'POST', '/api/v1/users', { Authorization: alice }, 403, 'forbidden', 'Bearer realm="keygate", error="insufficient_scope", scope="users:write"'],
    [name('another org'), 'GET', '/api/v1/orgs/acme/x', { Authorization: carol }, 403, 'forbidden', 'Bearer realm="keygate", error="insufficient_scope"'],
    [name('no route prefix'), 'GET', '/api/v2/users', { Authorization: alice }, 404, 'not_found', undefined],
    [name('a dot segment'), 'GET', '/api/v1/x/../users', { Authorization: alice }, 400, 'bad_request', undefined],
    [name('an encoded dot segment'), 'GET', '/api/v1/%2e%2e/v1/users', { Authorization: alice }, 400, 'bad_request', undefined],
    ...extra(alice)
  ]
  for (const [name, method, target, headers, status, code, challenge] of cases) {
    const before = gw.upstream.requests.length
    const res = await via(method, target, headers)
    t.equal(res.status, status, `${name}: ${status}`)
    t.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, code, `${name}: keygate's error object`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${name}: keygate's content type`)
    t.equal(res.headers['www-authenticate'], challenge, `${name}: keygate's challenge`)
    t.ok((res.headers['x-request-id'] ?? '') !== '', `${name}: X-Request-Id`)
    t.equal(gw.upstream.requests.length, before, `${name}: not forwarded`)
  }
}
