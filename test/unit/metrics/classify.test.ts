// src/metrics/classify.ts: the kind label of an upstream or Redis failure, from the
// errors undici and ioredis actually raise (the integration test proves refused, reset
// and timeout end to end; this covers the other shapes).
import t from 'tap'
import { errors as undici } from 'undici'
import { ReplyError } from 'ioredis'
import { redisLookupErrorKind, upstreamErrorKind } from '../../../src/metrics/classify.js'

const coded = (code: string): Error => Object.assign(new Error(`connect ${code} 10.0.0.1:80`), { code })

t.test('upstream failures', async (t) => {
  const rows: Array<[string, unknown, string]> = [
    ['ECONNREFUSED', coded('ECONNREFUSED'), 'refused'],
    ['ECONNREFUSED on every address (AggregateError)', new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]), 'refused'],
    ['ECONNRESET', coded('ECONNRESET'), 'reset'],
    ['undici: other side closed', new undici.SocketError('other side closed'), 'reset'],
    ['EPIPE', coded('EPIPE'), 'reset'],
    ['response headers past the timeout', new undici.HeadersTimeoutError(), 'timeout'],
    ['connect timeout', new undici.ConnectTimeoutError(), 'timeout'],
    ['a timeout wrapped in another error (its cause)', new Error('wrapped', { cause: new undici.HeadersTimeoutError() }), 'timeout'],
    ['a host that does not resolve', coded('ENOTFOUND'), 'other'],
    ['an invalid response from the upstream', new undici.HTTPParserError('Response does not match the HTTP/1.1 protocol'), 'other'],
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
