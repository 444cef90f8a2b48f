/**
 * Upstream responses stream to the client (src/data-plane/proxy.ts): the client reads
 * the first bytes while the upstream is still writing; a client that goes away
 * mid-answer ends the upstream request; an upstream that fails mid-answer closes the
 * client's connection; a connection carries request after request.
 */
import t from 'tap'
import type { Test } from 'tap'
import { createServer, request as httpRequest, Agent, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startGateway, eventually } from '../../helpers/gateway.js'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function upstream (t: Test, handler: Handler): Promise<number> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return (server.address() as AddressInfo).port
}

async function gatewayTo (t: Test, port: number): Promise<{ port: number, key: string }> {
  const gw = await startGateway(t, {
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no upstream "core"')
      core.url = `http://127.0.0.1:${port}`
    }
  })
  const { key } = await gw.fixtures.personalKey('bob')
  return { port: gw.port, key }
}

function get (port: number, key: string, agent?: Agent): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const r = httpRequest({ host: '127.0.0.1', port, path: '/api/v1/users', headers: { authorization: `Bearer ${key}` }, agent }, resolve)
    r.on('error', reject)
    r.end()
  })
}

t.test('the client reads the first chunk while the upstream is still writing', async (t) => {
  let finish: (() => void) | undefined
  const port = await upstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': 'yes' })
    res.write('first ')
    finish = () => res.end('last')
  })
  const gw = await gatewayTo(t, port)
  const res = await get(gw.port, gw.key)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-upstream'], 'yes', 'the upstream headers')
  t.ok(res.headers['x-request-id'], 'the request id')
  const first = await new Promise<string>((resolve) => res.once('data', (c: Buffer) => resolve(c.toString())))
  t.equal(first, 'first ', 'the first chunk, before the upstream ended')
  let rest = ''
  res.on('data', (c: Buffer) => { rest += c.toString() })
  const ended = new Promise<void>((resolve) => res.on('end', () => resolve()))
  finish?.()
  await ended
  t.equal(rest, 'last', 'then the rest')
})

t.test('a client gone mid-answer ends the upstream request', async (t) => {
  let upstreamClosed = false
  const port = await upstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('some ')
    res.on('close', () => { upstreamClosed = true })
  })
  const gw = await gatewayTo(t, port)
  const res = await get(gw.port, gw.key)
  await new Promise<void>((resolve) => res.once('data', () => resolve()))
  res.destroy()
  t.not(await eventually(async () => upstreamClosed, 5000), -1, 'the upstream connection was closed')
})

t.test('an upstream failing mid-answer closes the client connection', async (t) => {
  const port = await upstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' })
    res.write('partial')
    setTimeout(() => res.socket?.destroy(), 50)
  })
  const gw = await gatewayTo(t, port)
  const res = await get(gw.port, gw.key)
  t.equal(res.statusCode, 200)
  const outcome = await new Promise<string>((resolve) => {
    res.on('data', () => {})
    res.on('end', () => resolve('end'))
    res.on('error', () => resolve('error'))
    res.on('aborted', () => resolve('aborted'))
  })
  t.not(outcome, 'end', 'the client never sees a complete answer')
})

t.test('one client connection carries request after request', async (t) => {
  const port = await upstream(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end(`ok ${req.url ?? ''}`)
  })
  const gw = await gatewayTo(t, port)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const sockets = new Set<unknown>()
  for (let i = 0; i < 5; i++) {
    const res = await get(gw.port, gw.key, agent)
    sockets.add(res.socket)
    let body = ''
    res.on('data', (c: Buffer) => { body += c.toString() })
    await new Promise<void>((resolve) => res.on('end', () => resolve()))
    t.equal(body, 'ok /api/v1/users', `answer ${i}`)
  }
  t.equal(sockets.size, 1, 'all on one connection')
})
