// The process log sink (src/logger.ts) and the request log's ASCII JSON
// (src/pipeline/request-log.ts): lines reach a real file descriptor intact and in
// order, UTF-8 where pino wrote them, byte for byte where the request log did.
import t from 'tap'
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger, flushLogger, LogSink } from '../../src/logger.js'
import { asciiJson } from '../../src/pipeline/request-log.js'

t.test('asciiJson: pure ASCII, and the same value for a JSON parser', async (t) => {
  const values = ['/api/v1/café', 'naïve "quoted" \\ back', 'tab\there\u0000nul', '\u007f del', '日本語', 'emoji 😀', 'lone \ud800 surrogate', { path: '/ü', n: 1 }]
  for (const value of values) {
    const text = asciiJson(value)
    t.match(text, /^[\x20-\x7E]*$/, `ASCII: ${text}`)
    t.same(JSON.parse(text), JSON.parse(JSON.stringify(value)), 'parses to what JSON.stringify would')
  }
})

t.test('LogSink: pino lines and ASCII batches reach the file, in order, after flush', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-log-'))
  const file = join(dir, 'out.log')
  const fd = openSync(file, 'w')
  t.teardown(() => { closeSync(fd) })
  const sink = new LogSink(fd)
  const logger = createLogger('info', sink)

  logger.info({ who: 'Zoë' }, 'first')
  const batch = Array.from({ length: 2000 }, (_, i) => `{"n":${i}}\n`).join('')
  sink.writeBytes(Buffer.from(batch, 'latin1'))
  logger.info('last')
  await flushLogger(logger)

  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '')
  t.equal(lines.length, 2002, 'every line, none split or lost')
  t.equal(JSON.parse(lines[0] as string).who, 'Zoë', "pino's line is UTF-8")
  t.same(lines.slice(1, 2001).map((l) => JSON.parse(l).n), Array.from({ length: 2000 }, (_, i) => i), 'the batch, in order')
  t.equal(JSON.parse(lines[2001] as string).msg, 'last', 'then the line written after it')
})
