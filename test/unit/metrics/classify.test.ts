// src/metrics/classify.ts: the kind label of an upstream or Redis failure, from the
// errors @fastify/reply-from, undici and ioredis actually raise (the integration test
// proves refused, reset and timeout end to end; this covers the other shapes).
import t from 'tap'
import { createRequire } from 'node:module'
import { errors as undici } from 'undici'
import { ReplyError } from 'ioredis'
import { redisLookupErrorKind, upstreamErrorKind } from '../../../src/metrics/classify.js'

// the error classes reply-from hands to onError (CommonJS, untyped)
const E = createRequire(import.meta.url)('@fastify/reply-from/lib/errors.js') as Record<string, new (...args: unknown[]) => Error>
const coded = (code: string): Error => Object.assign(new Error(`connect ${code} 10.0.0.1:80`), { code })
const wrapped = (name: string, cause?: Error): Error => {
  const Ctor = E[name]
  if (Ctor === undefined) throw new Error(`no ${name} in reply-from's errors`)
  return name === 'InternalServerError' ? new Ctor('msg', { cause }) : new Ctor({ cause })
}

t.test('upstream failures', async (t) => {
  const rows: Array<[string, unknown, string]> = [
    ['ECONNREFUSED, wrapped by reply-from', wrapped('InternalServerError', coded('ECONNREFUSED')), 'refused'],
    ['ECONNREFUSED on every address (AggregateError)', wrapped('InternalServerError', new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')])), 'refused'],
    ['ECONNRESET', wrapped('ConnectionResetError', coded('ECONNRESET')), 'reset'],
    ['undici: other side closed', wrapped('UndiciSocketError', new undici.SocketError('other side closed')), 'reset'],
    ['EPIPE', wrapped('InternalServerError', coded('EPIPE')), 'reset'],
    ['response headers past the timeout', wrapped('GatewayTimeoutError', new undici.HeadersTimeoutError()), 'timeout'],
    ['connect timeout', wrapped('ConnectTimeoutError', new undici.ConnectTimeoutError()), 'timeout'],
    ['a host that does not resolve', wrapped('ServiceUnavailableError', coded('ENOTFOUND')), 'other'],
    ['an invalid status from the upstream', wrapped('BadGatewayError'), 'other'],
    ['a plain Error', new Error('x'), 'other'],
    ['not an Error', 'boom', 'other'],
    ['null', null, 'other']
  ]
  for (const [name, err, kind] of rows) t.equal(upstreamErrorKind(err), kind, name)
})

t.test('a cause chain that refers to itself ends', async (t) => {
  const a = coded('EXYZ') as Error & { cause?: unknown }
  a.cause = a
  t.equal(upstreamErrorKind(a), 'other')
})

t.test('Redis lookup failures', async (t) => {
  const reply = new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value') as Error
  t.equal(redisLookupErrorKind(reply), 'reply', 'an error reply')
  t.equal(redisLookupErrorKind(new Error('Command timed out')), 'timeout', 'past command_timeout_ms')
  t.equal(redisLookupErrorKind(new Error("Stream isn't writeable and enableOfflineQueue options is false")), 'connection', 'not connected, no offline queue')
  t.equal(redisLookupErrorKind(new Error('Connection is closed.')), 'connection', 'lost with the connection')
  t.equal(redisLookupErrorKind('weird'), 'connection', 'not an Error')
})
