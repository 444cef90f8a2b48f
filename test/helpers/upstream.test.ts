// Proves test/helpers/upstream.ts modes work and close() never hangs.
import t from 'tap'
import { connect } from 'node:net'
import { rawRequest, req, send } from './raw-http.js'
import { refusedPort, startUpstream } from './upstream.js'

t.test('echo records requests and answers with them', async (t) => {
  const upstream = await startUpstream()
  t.teardown(() => upstream.close())
  t.equal(upstream.url, `http://127.0.0.1:${upstream.port}`)
  t.equal(upstream.last(), undefined)
  const res = await send(upstream.port, 'PUT', '/x?y=1', { 'X-Key': 'v' }, '{"a":1}')
  t.equal(res.status, 200)
  t.equal(res.headers['content-type'], 'application/json')
  t.match(res.json(), { method: 'PUT', url: '/x?y=1', headers: { 'x-key': 'v', host: 'localhost' } })
  t.equal(upstream.last()?.body.toString(), '{"a":1}')
  t.equal(upstream.last()?.method, 'PUT')
})

t.test('status mode passes a fixed reply', async (t) => {
  const upstream = await startUpstream({ mode: { kind: 'status', status: 503, body: 'down', headers: { 'retry-after': '1' } } })
  t.teardown(() => upstream.close())
  const res = await send(upstream.port, 'GET', '/')
  t.equal(res.status, 503)
  t.equal(res.body, 'down')
  t.equal(res.headers['retry-after'], '1')
  upstream.setMode({ kind: 'status', status: 204 })
  t.equal((await send(upstream.port, 'GET', '/')).status, 204)
  upstream.setMode('echo')
  t.equal((await send(upstream.port, 'GET', '/')).headers['x-upstream'], 'yes')
  t.equal(upstream.requests.length, 3)
})

t.test('slow mode answers after the delay', async (t) => {
  const upstream = await startUpstream({ mode: { kind: 'slow', delayMs: 50 } })
  t.teardown(() => upstream.close())
  const res = await send(upstream.port, 'GET', '/slow')
  t.equal(res.status, 200)
  t.match(res.json(), { url: '/slow' })
})

t.test('reset mode drops the connection after recording the request', async (t) => {
  const upstream = await startUpstream({ mode: { kind: 'reset' } })
  t.teardown(() => upstream.close())
  const res = await send(upstream.port, 'POST', '/r', {}, 'body')
  t.equal(res.status, 0)
  t.equal(upstream.last()?.body.toString(), 'body')
})

t.test('hang mode never answers, and close() still returns', async (t) => {
  const upstream = await startUpstream({ mode: { kind: 'hang' } })
  const pending = rawRequest(upstream.port, req('GET', '/h'), { timeoutMs: 30_000 })
  while (upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
  await upstream.close()
  const res = await pending // the socket was destroyed: empty response, not a hang
  t.equal(res.status, 0)
  await upstream.close() // idempotent
})

t.test('refusedPort() refuses connections', async (t) => {
  const port = await refusedPort()
  const code = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    socket.on('connect', () => { socket.destroy(); resolve('connected') })
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code))
  })
  t.equal(code, 'ECONNREFUSED')
})
