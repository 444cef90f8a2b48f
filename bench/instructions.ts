// The `instructions` extra (opt-in: BENCH_EXTRAS=instructions): the baseline, the
// reference (fastify + @fastify/reply-from), keygate (personal key, cache warm,
// request log on) and the same with tracing on (sample_ratio 1.0, spans exported to a
// stand-in collector) each run under valgrind's callgrind,
// which counts the machine instructions a process executes. After a warm-up long
// enough for the JIT to settle, the counters are zeroed, a fixed number of requests
// is sent, and the counts are dumped: instructions per request, main thread (the
// event loop, where a request's work happens) and all threads (with V8's compiler
// and GC helper threads, which keep compiling under valgrind).
//
// Why: on the shared VMs this runs on, a core's speed drifts by up to 2x between
// rounds, so req/s ratios move by +-20% from run to run. An instruction count does not
// depend on what the host does: keygate's main thread read 340-349k instructions a
// request in three runs. It is not time (cache misses and the kernel's share are not
// in it), so it complements the table rather than replacing it; see
// docs/benchmarks.md, Method.
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import autocannon from 'autocannon'
import type { ExtraResult } from './extras.js'
import { grpcLoad } from './grpc-load.js'
import { benchKeys, registryCalls, startKeygate } from './keygate.js'
import { perRequest } from './load.js'
import type { Launcher } from './process.js'
import { BENCH_PATH, startBaseline } from './servers.js'
import type { RunningServer, ScenarioContext } from './types.js'

const WARMUP_REQUESTS = 20_000
const MEASURED_REQUESTS = 5_000
const CONNECTIONS = 50
/** node starts ~50x slower under valgrind */
const READY_TIMEOUT_MS = 180_000

const run = promisify(execFile)

export interface Counted {
  name: string
  mainPerReq: number
  allPerReq: number
  registryReads: number | undefined
  failures: string[]
}

export async function instructions (ctx: ScenarioContext): Promise<ExtraResult> {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' })
  } catch {
    return { markdown: '', failures: ['instructions: valgrind is not installed (apt-get install -y valgrind)'] }
  }
  const dir = mkdtempSync(join(tmpdir(), 'keygate-callgrind-'))
  const launcher = (name: string): Launcher => ({
    prefix: [
      'valgrind', '--tool=callgrind', '--separate-threads=yes', '--dump-instr=no',
      `--callgrind-out-file=${join(dir, name)}.%p`
    ],
    readyTimeoutMs: READY_TIMEOUT_MS
  })
  try {
    // one after the other, each pinned to the server core
    const baseline = await count({
      name: 'baseline',
      start: async () => await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus, launcher('baseline')),
      // (the baseline is told its listen address in HOST, which valgrind also reads: see `control`)
      host: '127.0.0.1',
      headers: {},
      dir
    })
    // fastify + @fastify/reply-from, no auth: http-proxy's engine without its route handler
    const compared = ctx.compareCli !== undefined
    const reference = compared
      ? undefined
      : await count({
        name: 'reference',
        start: async () =>
          await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus, launcher('reference'), 'reply-from'),
        host: '127.0.0.1',
        headers: {},
        dir
      })
    const keygate = await count({
      name: 'keygate',
      // A gateway under valgrind runs ~50x slower than its clock: with the default
      // 500 ms freshness it would refetch records the real gateway serves from its cache.
      start: async () =>
        await startKeygate(ctx, 'keygate-callgrind', { cache: '{ ttl_ms: 60000 }', launcher: launcher('keygate') }),
      host: process.env['HOST'],
      headers: { authorization: `Bearer ${benchKeys.personal.key}` },
      dir,
      reads: async () => (await registryCalls()).records
    })
    if (reference === undefined) {
      // BENCH_COMPARE: keygate's headline against the other build's, instead of the
      // reference and tracing rows (each row under valgrind takes minutes)
      const other = await count({
        name: 'keygate, compare build',
        start: async () => await startKeygate({ ...ctx, keygateCli: ctx.compareCli }, 'keygate-compare-callgrind', {
          cache: '{ ttl_ms: 60000 }', launcher: launcher('keygate-compare')
        }),
        host: process.env['HOST'],
        headers: { authorization: `Bearer ${benchKeys.personal.key}` },
        dir,
        file: 'keygate-compare'
      })
      const k = (n: number): string => `${(n / 1000).toFixed(1)}k`
      const row = (c: Counted): string => `| ${c.name} | ${k(c.mainPerReq)} | ` +
        `${(baseline.mainPerReq / c.mainPerReq).toFixed(2)}× | ${k(c.allPerReq)} | ${c.registryReads ?? '–'} |`
      return {
        markdown: [
          '### Instructions per request (callgrind), this build against BENCH_COMPARE\'s: ' +
          `${MEASURED_REQUESTS.toLocaleString('en')} requests after ${WARMUP_REQUESTS.toLocaleString('en')} of warm-up`,
          '',
          '| server | main thread, instructions/request | baseline ÷ this (main thread) | all threads | registry ' +
          'reads in the window |',
          '|---|---:|---:|---:|---:|',
          row(baseline), row(keygate), row(other),
          `(this build ÷ the compare build, main thread: ${(other.mainPerReq / keygate.mainPerReq).toFixed(3)}×)`,
          ''
        ].join('\n'),
        failures: [...baseline.failures, ...keygate.failures, ...other.failures]
      }
    }
    const tracing = await count({
      name: 'keygate, tracing on',
      start: async () => await startKeygate(ctx, 'keygate-tracing-callgrind', {
        cache: '{ ttl_ms: 60000 }', launcher: launcher('keygate-tracing'), tracing: { sampleRatio: 1 }
      }),
      host: process.env['HOST'],
      headers: { authorization: `Bearer ${benchKeys.personal.key}` },
      dir,
      file: 'keygate-tracing'
    })
    const failures = [...baseline.failures, ...reference.failures, ...keygate.failures, ...tracing.failures]
    if (keygate.registryReads !== 0) {
      failures.push(`instructions: keygate read ${keygate.registryReads ?? '?'} registry records in the measured ` +
        'window (expected every record from the cache)')
    }
    const k = (n: number): string => `${(n / 1000).toFixed(1)}k`
    const row = (c: Counted): string => `| ${c.name} | ${k(c.mainPerReq)} | ` +
      `${(baseline.mainPerReq / c.mainPerReq).toFixed(2)}× | ${k(c.allPerReq)} | ${c.registryReads ?? '–'} |`
    return {
      markdown: [
        `### Instructions per request (callgrind): ${MEASURED_REQUESTS.toLocaleString('en')} requests after ` +
        `${WARMUP_REQUESTS.toLocaleString('en')} of warm-up`,
        '',
        '| server | main thread, instructions/request | baseline ÷ this (main thread) | all threads | registry reads ' +
        'in the window |',
        '|---|---:|---:|---:|---:|',
        row(baseline),
        row(reference),
        row(keygate),
        row(tracing),
        '(keygate\'s instructions ÷ keygate\'s with tracing on, the throughput ratio tracing would give: main thread ' +
        `${(keygate.mainPerReq / tracing.mainPerReq).toFixed(2)}×, all threads ` +
        `${(keygate.allPerReq / tracing.allPerReq).toFixed(2)}×)`,
        '',
        'Counted by valgrind (`--tool=callgrind`), not timed: the same on a quiet or a noisy machine. The ratio of ' +
        'main-thread counts is the ' +
        'throughput ratio the event loop\'s work alone would give; time also depends on cache misses and the kernel, ' +
        'which this does not see. ' +
        'The other threads are V8\'s compiler and GC helpers; under valgrind the compiler keeps working long after ' +
        'it would have settled at full speed, ' +
        'so that column varies from run to run. The reference is fastify + @fastify/reply-from without auth ' +
        '(http-proxy\'s engine without its route handler).',
        ''
      ].join('\n'),
      failures
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface CountOptions {
  name: string
  start: () => Promise<RunningServer>
  /** the HOST the server process sees */
  host: string | undefined
  headers: Record<string, string>
  dir: string
  reads?: () => Promise<number>
  /** the callgrind output's file name, when it is not `name` */
  file?: string
  /** requests of warm-up and counted requests; default 20,000 and 5,000 */
  amounts?: { warmUp: number, measured: number }
  /** the request path; default BENCH_PATH */
  path?: string
  /** headers made for each request, over `headers` (the cold-keys target's Authorization) */
  headersFor?: (() => Record<string, string>) | undefined
  /** Envoy's Check calls (bench/grpc-load.ts) instead of HTTP requests */
  grpc?: boolean | undefined
}

export async function count (o: CountOptions): Promise<Counted> {
  const server = await o.start()
  const pid = server.pid
  if (pid === undefined) throw new Error(`instructions: ${o.name} has no pid`)
  const failures: string[] = []
  try {
    const send = async (amount: number): Promise<{ responses: number, bad: number }> => o.grpc === true
      ? await checks(server.port, amount)
      : await load(server.port, o.headers, amount, o.path, o.headersFor)
    const warm = await send(o.amounts?.warmUp ?? WARMUP_REQUESTS)
    if (warm.bad > 0) {
      process.stderr.write(`[bench] instructions: ${o.name} warm-up had ${warm.bad} failed requests (a server ` +
        'starting under valgrind can time out)\n')
    }
    const readsBefore = await o.reads?.()
    await control(pid, o.host, '--zero')
    const measured = await send(o.amounts?.measured ?? MEASURED_REQUESTS)
    await control(pid, o.host, '--dump')
    const readsAfter = await o.reads?.()
    if (measured.bad > 0) {
      failures.push(`instructions: ${o.name} had ${measured.bad} failed requests in the measured window`)
    }
    const threads = dumpTotals(o.dir, o.file ?? o.name, pid)
    if (threads.length === 0) {
      failures.push(`instructions: no callgrind dump of ${o.name} (is HOST the one the server saw?)`)
    }
    const main = threads[0] ?? 0
    return {
      name: o.name,
      mainPerReq: main / measured.responses,
      allPerReq: threads.reduce((a, b) => a + b, 0) / measured.responses,
      registryReads: readsBefore === undefined || readsAfter === undefined ? undefined : readsAfter - readsBefore,
      failures
    }
  } finally {
    await server.stop()
  }
}

async function load (
  port: number, headers: Record<string, string>, amount: number, path = BENCH_PATH,
  headersFor?: () => Record<string, string>
): Promise<{ responses: number, bad: number }> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    headers,
    connections: CONNECTIONS,
    amount,
    timeout: 60,
    ...(headersFor === undefined ? {} : { requests: [{ setupRequest: perRequest(headersFor) }] })
  })
  return { responses: result.requests.total, bad: result.non2xx + result.errors }
}

async function checks (port: number, amount: number): Promise<{ responses: number, bad: number }> {
  const { answered, refused } = await grpcLoad(port, { amount })
  return { responses: answered, bad: refused }
}

/**
 * callgrind_control talks to the valgrind process through files in /tmp named after
 * its pid, $USER and $HOST as the valgrind process saw them: it must see the same.
 */
async function control (pid: number, host: string | undefined, command: '--zero' | '--dump'): Promise<void> {
  const env = { ...process.env }
  if (host === undefined) delete env['HOST']
  else env['HOST'] = host
  await run('callgrind_control', [command, String(pid)], { env })
}

/** Instructions per thread (main thread first) of the first dump: files `<name>.<pid>.1-<thread>`. */
function dumpTotals (dir: string, name: string, pid: number): number[] {
  const prefix = `${name}.${pid}.1-`
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .sort()
    .map((f) => Number(/^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'))?.[1] ?? 0))
}
