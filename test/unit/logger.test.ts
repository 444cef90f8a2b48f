// The process log sink (src/logger.ts) and the request log's ASCII JSON
// (src/http/request-log.ts): lines reach a real file descriptor intact and in
// order, UTF-8 where pino wrote them, byte for byte where the request log did; a
// stdout nobody reads (a real FIFO) neither crashes the process nor grows its memory.
import t from 'tap'
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, constants, mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger, flushLogger, LogSink } from '../../src/logger.js'
import { asciiJson } from '../../src/http/request-log.js'
import { until } from '../helpers/wait.js'

function fifo (): string {
  const path = join(mkdtempSync(join(tmpdir(), 'keygate-fifo-')), 'stdout')
  execFileSync('mkfifo', [path])
  return path
}

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

t.test('LogSink: once nobody reads stdout (EPIPE), the error and the lines after it are counted, the process lives on', async (t) => {
  const path = fifo()
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(path, constants.O_WRONLY)
  closeSync(reader) // the log shipper went away: a write now fails with EPIPE
  t.teardown(() => { closeSync(writer) })
  const sink = new LogSink(writer)
  const logger = createLogger('info', sink)

  sink.writeBytes(Buffer.from('{"n":1}\n'))
  await until(() => sink.stats.writeErrors === 1, 5000, 'the failed write')
  sink.writeBytes(Buffer.from('{"n":2}\n{"n":3}\n'))
  logger.info("a line of pino's own")
  t.equal(sink.stats.droppedLines, 3, 'the lines after it are counted as dropped')
  await flushLogger(logger, 200)
  t.pass('flushing a broken stdout returns')
})

t.test('LogSink: any other failed write is counted once, not thrown, and the log ends there', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-log-')), 'read-only.log')
  closeSync(openSync(file, 'w'))
  const fd = openSync(file, 'r') // every write fails with EBADF
  t.teardown(() => { closeSync(fd) })
  const sink = new LogSink(fd)
  sink.writeBytes(Buffer.from('{"n":1}\n'))
  await until(() => sink.stats.writeErrors >= 1, 5000, 'the failed write')
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(sink.stats.writeErrors, 1, 'one failed write, one count (pino re-emits it)')
  sink.writeBytes(Buffer.from('{"n":2}\n'))
  t.equal(sink.stats.droppedLines, 1, 'the lines after it are dropped and counted')
  sink.flushSync()
  t.pass('a synchronous flush (pino calls it at exit) returns instead of retrying forever')
})

t.test('LogSink: a stalled stdout holds at most maxBufferBytes; later lines are dropped and counted', async (t) => {
  const path = fifo()
  // read and write ends in one descriptor: writes succeed until the pipe is full, then block
  const fd = openSync(path, 'r+')
  t.teardown(() => { closeSync(fd) })
  const sink = new LogSink(fd, { maxBufferBytes: 256 * 1024 })

  const line = Buffer.from('x'.repeat(1023) + '\n') // 1 KiB
  for (let i = 0; i < 2048; i++) sink.writeBytes(line) // 2 MiB into a stalled pipe
  t.ok(sink.stats.droppedLines >= 2048 - 256 - 64 - 1024, `most of the 2 MiB was dropped (${sink.stats.droppedLines} lines)`)
  t.ok(sink.stats.droppedLines <= 2048 - 256, 'what fits in the buffer was kept')
  t.equal(sink.stats.writeErrors, 0, 'a stall is not an error')

  // a reader appears: what was kept is written, and the sink accepts lines again
  const cat = spawn('cat', [path], { stdio: ['ignore', 'pipe', 'ignore'] })
  let received = 0
  cat.stdout.on('data', (chunk: Buffer) => { received += chunk.length })
  t.teardown(() => { cat.kill() })
  await until(() => received >= 256 * 1024, 10_000, 'the kept lines to reach the reader')
  const dropped = sink.stats.droppedLines
  sink.writeBytes(line)
  await new Promise<void>((resolve) => { sink.flush(() => { resolve() }) })
  t.equal(sink.stats.droppedLines, dropped, 'a line written after the stall is not dropped')
  cat.kill()
  await once(cat, 'exit')
})
