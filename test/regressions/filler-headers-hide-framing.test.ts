/**
 * Node keeps only the first 1,000 header fields of a request in req.headers and
 * rawHeaders, but its parser frames the body with all of them. 1,000 filler
 * headers followed by `Transfer-Encoding: chunked` hid the framing from every check
 * that read req.headers: a 20 MiB body streamed past a 10 MiB limit, and the
 * upstream (node too) dropped the identity headers that came after the filler.
 *
 * Fixed twice over: a request with more than `limits.header_count` fields gets
 * 431 (the gateway sees every field up to one past the limit), and the body limit
 * counts the bytes that actually stream, so no byte past `limits.body_bytes`
 * reaches an upstream whatever headers the client sent.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, eventually } from '../helpers/gateway.js'
import { rawRequest, req, type RawResponse } from '../helpers/raw-http.js'
import { startWatchingUpstream, type WatchingUpstream } from '../helpers/watching-upstream.js'

function assertError (t: Test, res: RawResponse, status: number, code: string, message: string): void {
  t.equal(res.status, status, `status ${status}`)
  t.same(res.json(), { error: { code, message, status } }, `the catalogue body for ${status}`)
  t.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/, 'a request id')
}

const filler = (n: number): Array<[string, string]> => Array.from({ length: n }, (_v, i): [string, string] => [`X-F${i}`, 'f'])

/** `size` bytes of body, chunked in pieces of 1000 */
function chunkedBody (size: number): string {
  const piece = 'b'.repeat(1000)
  let out = ''
  for (let sent = 0; sent < size; sent += 1000) out += `3e8\r\n${piece}\r\n`
  return out + '0\r\n\r\n'
}

async function watched (t: Test, yaml: string): Promise<{ gw: Awaited<ReturnType<typeof startGateway>>, watcher: WatchingUpstream }> {
  const watcher = await startWatchingUpstream()
  t.teardown(() => watcher.close())
  const gw = await startGateway(t, {
    yaml,
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no upstream "core"')
      core.url = watcher.url
    }
  })
  return { gw, watcher }
}

t.test('1,000 filler headers, then Transfer-Encoding: chunked: 431, nothing reaches the upstream', async (t) => {
  const { gw, watcher } = await watched(t, 'limits: { body_bytes: 1000, header_bytes: 65536 }\n')
  const { key } = await gw.fixtures.personalKey('bob')
  // with a Content-Type among the first fields, a body is expected and streamed; without, none is
  for (const lead of [[['Content-Type', 'application/octet-stream']], []] as Array<Array<[string, string]>>) {
    await t.test(lead.length === 0 ? 'no Content-Type' : 'Content-Type first', async (t) => {
      const headers: Array<[string, string]> = [['Authorization', `Bearer ${key}`], ...lead, ...filler(1000), ['Transfer-Encoding', 'chunked']]
      const res = await rawRequest(gw.port, req('POST', '/api/v1/users', headers, chunkedBody(20_000)))
      assertError(t, res, 431, 'header_too_large', 'Request headers too large')
      t.ok(res.closed, 'the connection is closed')
      await new Promise((resolve) => setTimeout(resolve, 200))
      t.equal(watcher.requests.length, 0, 'the upstream never saw the request')
      t.equal((await gw.logOf(res))?.reason, 'header_too_large', 'logged with its reason')
    })
  }
})

t.test('limits.header_count: that many fields pass, one more is 431', async (t) => {
  const gw = await startGateway(t, { yaml: 'limits: { header_count: 20 }\n' })
  const { key } = await gw.fixtures.personalKey('alice')
  // req() adds Host and Connection: with Authorization, 3 fields besides the filler
  const at = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${key}`], ...filler(17)])
  t.equal(at.status, 200, '20 fields: forwarded')
  const over = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${key}`], ...filler(18)])
  assertError(t, over, 431, 'header_too_large', 'Request headers too large')
  const anonymous = await gw.send('GET', '/api/v1/users', filler(50))
  assertError(t, anonymous, 431, 'header_too_large', 'Request headers too large')
})

t.test('the default header_count is 100', async (t) => {
  const gw = await startGateway(t)
  t.equal(gw.config.limits.header_count, 100)
  const { key } = await gw.fixtures.personalKey('alice')
  t.equal((await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${key}`], ...filler(97)])).status, 200, '100 fields: forwarded')
  assertError(t, await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${key}`], ...filler(98)]), 431, 'header_too_large', 'Request headers too large')
})

t.test('no body byte past limits.body_bytes reaches the upstream, counted as it streams', async (t) => {
  // header_count above node's own 1,000: the filler is admitted, and the limit still holds
  const { gw, watcher } = await watched(t, 'limits: { body_bytes: 1000, header_bytes: 65536, header_count: 2000 }\n')
  const { key } = await gw.fixtures.personalKey('bob')
  for (const [name, extra] of [['no filler', 0], ['1,000 filler headers', 1000], ['1,500 filler headers', 1500]] as const) {
    await t.test(name, async (t) => {
      const before = watcher.requests.length
      const headers: Array<[string, string]> = [['Authorization', `Bearer ${key}`], ['Content-Type', 'application/octet-stream'], ...filler(extra), ['Transfer-Encoding', 'chunked']]
      const res = await rawRequest(gw.port, req('POST', '/api/v1/users', headers, chunkedBody(20_000)))
      assertError(t, res, 413, 'payload_too_large', 'Request body too large')
      await eventually(async () => watcher.requests.slice(before).every((r) => r.ended || r.aborted), 2000)
      const seen = watcher.requests.slice(before)
      t.ok(seen.every((r) => r.bytes <= 1000), `at most 1000 body bytes reached the upstream (saw ${seen.map((r) => r.bytes).join(', ')})`)
      t.ok(seen.every((r) => !r.ended), 'the upstream never received a complete request')
    })
  }
})
