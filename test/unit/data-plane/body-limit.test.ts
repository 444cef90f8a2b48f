import t from 'tap'
import { PassThrough, Writable } from 'node:stream'
import { BodyRefused, bodyRefusal, declaredTooLarge, limitBody } from '../../../src/data-plane/body-limit.js'

const LIMITS = { bytes: 10, idleMs: 60_000 }

/** Reads `body` to its end: the bytes, or the error it failed with. */
async function drain (body: NodeJS.ReadableStream): Promise<{ bytes: Buffer, error?: unknown }> {
  const chunks: Buffer[] = []
  return await new Promise((resolve) => {
    body.on('error', (error) => resolve({ bytes: Buffer.concat(chunks), error }))
    body.pipe(new Writable({
      write (chunk: Buffer, _enc, cb) { chunks.push(chunk); cb() },
      final (cb) { resolve({ bytes: Buffer.concat(chunks) }); cb() }
    }))
  })
}

t.test('declaredTooLarge: only a Content-Length over the limit', async (t) => {
  const cases: Array<[string | undefined, boolean]> = [[undefined, false], ['0', false], ['10', false], ['11', true], ['1000000000000', true]]
  for (const [declared, expected] of cases) {
    t.equal(declaredTooLarge(declared === undefined ? {} : { 'content-length': declared }, 10), expected, `Content-Length ${String(declared)}`)
  }
})

t.test('a body within the limit passes byte for byte', async (t) => {
  const source = new PassThrough()
  const body = limitBody(source, LIMITS)
  const read = drain(body)
  source.write('01234')
  source.end('56789')
  const { bytes, error } = await read
  t.equal(error, undefined)
  t.equal(bytes.toString(), '0123456789')
})

t.test('past the limit: the stream fails as too_large, no byte past the limit passes, the source is left alone', async (t) => {
  const source = new PassThrough()
  const body = limitBody(source, LIMITS)
  const read = drain(body)
  source.write('0123456789')
  source.write('X')
  const { bytes, error } = await read
  t.ok(error instanceof BodyRefused)
  t.equal(bodyRefusal(error), 'too_large')
  t.ok(bytes.length <= 10, `at most 10 bytes passed (${bytes.length})`)
  t.notOk(bytes.toString().includes('X'), 'not the byte past the limit')
  t.notOk(source.destroyed, 'the client\'s stream is not destroyed (the answer can still be written)')
})

t.test('a source closed before its end: client_gone', async (t) => {
  const source = new PassThrough()
  const body = limitBody(source, LIMITS)
  const read = drain(body)
  source.write('012')
  source.destroy()
  const { error } = await read
  t.equal(bodyRefusal(error), 'client_gone')
})

t.test('bodyRefusal reads the cause chain, and fastify\'s own limit', async (t) => {
  t.equal(bodyRefusal(new Error('outer', { cause: new Error('mid', { cause: new BodyRefused('idle') }) })), 'idle')
  t.equal(bodyRefusal(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE' })), 'too_large')
  t.equal(bodyRefusal(new Error('other')), undefined)
  t.equal(bodyRefusal('not an error'), undefined)
})
