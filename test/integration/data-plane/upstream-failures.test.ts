/**
 * Upstream failures (docs/errors.md, the upstream rows):
 * refused, reset or unreachable: `502 bad_gateway`; past the upstream's
 * timeout: `504 gateway_timeout`. No internal address, library error code or
 * stack reaches the client. Responses from the upstream itself (a 500 or 503
 * included) pass through unchanged, and are not retried.
 */
import { createServer, type AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { refusedPort, type UpstreamMode } from '../../helpers/upstream.js'

const ERRORS = {
  502: { code: 'bad_gateway', message: 'Upstream service unavailable' },
  504: { code: 'gateway_timeout', message: 'Upstream service timed out' }
} as const

/** Everything the client sees, except the request id and date (random digits). */
function visible (res: RawResponse): string {
  const headers = res.rawHeaders.filter(([n]) => !['x-request-id', 'date'].includes(n.toLowerCase()))
  return headers.map(([n, v]) => `${n}: ${v}`).join('\n') + '\n\n' + res.body
}

function assertGatewayError (t: Test, res: RawResponse, status: 502 | 504, upstreamPort: number): void {
  const { code, message } = ERRORS[status]
  t.equal(res.status, status, `status ${status}`)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'JSON error content type')
  t.same(JSON.parse(res.body), { error: { code, message, status } }, `exactly the catalogue body for ${status}`)
  t.ok((res.headers['x-request-id'] ?? '') !== '', 'carries X-Request-Id')
  const seen = visible(res)
  for (const leak of ['127.0.0.1', String(upstreamPort), 'ECONNREFUSED', 'ECONNRESET', 'UND_ERR', 'stack', 'undici', 'Error']) {
    t.notOk(seen.includes(leak), `nothing the client sees contains ${JSON.stringify(leak)}`)
  }
}

/** The upstream "core", rewritten. */
function upstreamYaml (url: string, timeoutMs: number): string {
  return `upstreams:\n  core: { url: "${url}", timeout_ms: ${timeoutMs}, connect_timeout_ms: 1000 }\n`
}

async function keys (gw: TestGateway): Promise<{ reader: string, writer: string }> {
  return {
    reader: (await gw.fixtures.personalKey('alice')).key,
    writer: (await gw.fixtures.personalKey('bob')).key
  }
}

t.test('upstream refuses the connection: 502 bad_gateway', async (t) => {
  const port = await refusedPort()
  const gw = await startGateway(t, { yaml: upstreamYaml(`http://127.0.0.1:${port}`, 2000) })
  const { reader, writer } = await keys(gw)

  await t.test('GET', async (t) => {
    assertGatewayError(t, await gw.get('/api/v1/users', reader), 502, port)
  })
  await t.test('POST with a body', async (t) => {
    const res = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json' }, '{"name":"x"}')
    assertGatewayError(t, res, 502, port)
  })
  await t.test('refused again on a second request (no cached failure turns into something else)', async (t) => {
    assertGatewayError(t, await gw.get('/api/v1/users', reader), 502, port)
  })
})

t.test('upstream response that breaks HTTP/1.1 (a control character in a header value): 502 bad_gateway', async (t) => {
  // undici refuses the response while parsing it, so no such value can reach the client
  const upstream = createServer((socket) => {
    socket.once('data', () => { socket.end('HTTP/1.1 200 OK\r\nX-Bad: a\x01b\r\nContent-Length: 2\r\n\r\nok') })
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { upstream.close() })
  const port = (upstream.address() as AddressInfo).port
  const gw = await startGateway(t, { yaml: upstreamYaml(`http://127.0.0.1:${port}`, 2000) })
  const { reader } = await keys(gw)
  const res = await gw.get('/api/v1/users', reader)
  assertGatewayError(t, res, 502, port)
  t.notOk(visible(res).includes('X-Bad'), 'the bad header does not reach the client')
})

t.test('upstream host that does not resolve (unreachable): 502 bad_gateway', async (t) => {
  // .invalid never resolves (RFC 6761)
  const gw = await startGateway(t, { yaml: upstreamYaml('http://upstream.keygate-test.invalid:8080', 2000) })
  const { reader } = await keys(gw)
  const res = await gw.get('/api/v1/users', reader)
  assertGatewayError(t, res, 502, 8080)
  t.notOk(visible(res).includes('keygate-test.invalid'), 'the upstream host name does not reach the client')
  t.notOk(visible(res).includes('ENOTFOUND'), 'nor the resolver error')
})

t.test('upstream resets the connection: 502 bad_gateway', async (t) => {
  const gw = await startGateway(t, { upstreamMode: { kind: 'reset' } })
  const { reader, writer } = await keys(gw)

  await t.test('GET', async (t) => {
    const res = await gw.get('/api/v1/users', reader)
    assertGatewayError(t, res, 502, gw.upstream.port)
    t.ok(gw.upstream.requests.length >= 1, 'the upstream did receive the request before resetting')
  })
  await t.test('POST with a body', async (t) => {
    const res = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${writer}` }, '{"name":"x"}')
    assertGatewayError(t, res, 502, gw.upstream.port)
  })
})

t.test('upstream slower than its timeout: 504 gateway_timeout', async (t) => {
  const modes: Array<[string, UpstreamMode]> = [
    ['answers after 1500 ms, timeout 300 ms', { kind: 'slow', delayMs: 1500 }],
    ['never answers, timeout 300 ms', { kind: 'hang' }]
  ]
  for (const [name, mode] of modes) {
    await t.test(name, async (t) => {
      const gw = await startGateway(t, {
        upstreamMode: mode,
        configure: (config) => {
          const core = config.upstreams.core
          if (core === undefined) throw new Error('no upstream "core"')
          core.timeout_ms = 300
        }
      })
      const { reader } = await keys(gw)
      const res = await gw.get('/api/v1/users', reader)
      assertGatewayError(t, res, 504, gw.upstream.port)
      t.equal(gw.upstream.requests.length, 1, 'the request reached the upstream once, and was not replayed')
    })
  }

  await t.test('control: the same slow upstream within its timeout is answered', async (t) => {
    const gw = await startGateway(t, { upstreamMode: { kind: 'slow', delayMs: 300 } })
    const { reader } = await keys(gw)
    const res = await gw.get('/api/v1/users', reader)
    t.equal(res.status, 200, 'forwarded (timeout_ms is 2000 here)')
    t.equal(res.headers['x-upstream'], 'yes', 'the upstream\'s answer')
  })
})

t.test('upstream error responses pass through unchanged and are not retried', async (t) => {
  const cases: Array<[string, string, number, string, Record<string, string>]> = [
    ['GET answered 500', 'GET', 500, '{"upstream":"boom","detail":"at 127.0.0.1"}', { 'content-type': 'application/json', 'x-upstream-marker': 'five-hundred' }],
    ['GET answered 503', 'GET', 503, 'upstream maintenance', { 'content-type': 'text/plain', 'retry-after': '120', 'x-upstream-marker': 'five-oh-three' }],
    ['POST answered 500', 'POST', 500, '{"upstream":"boom"}', { 'content-type': 'application/json', 'x-upstream-marker': 'post-500' }],
    ['GET answered 502 by the upstream itself', 'GET', 502, '<html>upstream says bad gateway</html>', { 'content-type': 'text/html', 'x-upstream-marker': 'own-502' }],
    ['GET answered 504 by the upstream itself', 'GET', 504, 'upstream says timeout', { 'content-type': 'text/plain', 'x-upstream-marker': 'own-504' }]
  ]
  for (const [name, method, status, body, headers] of cases) {
    await t.test(name, async (t) => {
      const gw = await startGateway(t, { upstreamMode: { kind: 'status', status, body, headers } })
      const { writer } = await keys(gw)
      const res = await gw.send(method, '/api/v1/users', { Authorization: `Bearer ${writer}` }, method === 'POST' ? '{}' : undefined)
      t.equal(res.status, status, 'the upstream\'s status')
      t.equal(res.body, body, 'the upstream\'s body, byte for byte')
      for (const [n, v] of Object.entries(headers)) t.equal(res.headers[n], v, `the upstream's ${n} header`)
      // let a retry, if any, reach the upstream before counting
      await new Promise((resolve) => setTimeout(resolve, 300))
      t.equal(gw.upstream.requests.length, 1, 'exactly one upstream request: no retry')
    })
  }
})
