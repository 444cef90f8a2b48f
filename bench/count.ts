// Instruction counts of one server at a time, for work on a single change: the
// `instructions` extra's method (bench/instructions.ts) with fewer requests and any of
// the rows, unpinned (a count does not depend on the machine's load).
//
//   node bench/dist/count.js <target>...    targets: baseline (the lean node:http + undici proxy),
//                                           fastify-proxy (fastify + @fastify/http-proxy),
//                                           reference (fastify + @fastify/reply-from), keygate, keygate-nolog,
//                                           keygate-log-sampled (log.allowed_sample_ratio: 0.01),
//                                           keygate-nousage (usage counting off), keygate-nokeylog (the
//                                           per-key request log off), keygate-nowebhooks, keygate-bare
//                                           (all four off: the decision and the proxy), keygate-tracing (spans
//                                           as protobuf), keygate-tracing-json (OTLP JSON, the default),
//                                           keygate-limited, keygate-metered (a rate limit, a quota; usage off),
//                                           keygate-strip (the strip_prefix row: a second route, its prefix cut),
//                                           keygate-targets (the 3 targets row: the upstream as three
//                                           round-robin targets of the origin), keygate-shadow (the 10
//                                           shadow rules row),
//                                           keygate-cold (the cold-keys row: BENCH_COLD_KEYS distinct
//                                           keys cycled in order, each request a miss; prints the
//                                           registry reads per request), keygate-cold-nokeylog (the
//                                           same with the per-key request log off),
//                                           authz, authz-log-sampled, hello, hello-node-http,
//                                           authz-grpc (the gRPC authorizer: Envoy's Check, as
//                                           bench/grpc-load.ts sends it), grpc-hello, grpc-hello-lean,
//                                           connect-hello (its floors: grpc-js with proto-loader's
//                                           codec or keygate's, Connect),
//                                           keygate-compare, keygate-cold-compare, keygate-tracing-compare,
//                                           authz-compare
//                                           (BENCH_COMPARE's build)
// Env: COUNT_WARMUP (default 10000), COUNT_MEASURED (default 3000), COUNT_KEEP=1 keeps the
// callgrind files (their directory is printed), COUNT_NODE_ARGS: node's own options for the servers
// (`--no-concurrent-recompilation`: V8 optimises on the main thread, so what a count holds does not
// depend on how far a background compile got under valgrind; the compiling is counted too),
// COUNT_CPU_PROF=<dir>: instead of valgrind, run the server under `node --cpu-prof` into <dir>
// (JS-level attribution; bench/dist/profile.js reads the profiles), printing the registry script calls
// (EVALSHA round trips) per request;
// COUNT_HEAP_PROF=<dir>: V8's sampling heap profiler over the inspector during the measured requests
// only, every allocation sampled (every 1 KiB), those a scavenge or a mark-compact collected included:
// what the requests allocate, by the function; with COUNT_HEAP_SURVIVORS=1 only what no scavenge collected:
// promoted to the old generation, still live when the profile stops, or still young when a mark-compact collected it
// (V8 counts those as collected by a major GC): what outlives the young generation where mark-compacts are rare
// (a cached key), an upper bound of it where they are not (the cold keys).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { coldKeys, nextColdAuthorization } from './cold-keys.js'
import { grpcLoad } from './grpc-load.js'
import { count, type Counted } from './instructions.js'
import { benchKeys, registryCalls, startKeygate, STRIP_PREFIX, type KeygateOptions } from './keygate.js'
import { perRequest } from './load.js'
import { freePort } from './port.js'
import { nodeArgsFrom, stopAll, type Launcher } from './process.js'
import { BENCH_PATH, startBaseline, startGrpcHello, startHello, startOriginContext } from './servers.js'
import type { RunningServer } from './types.js'
import { threeTargets, traefikDecision } from './scenarios.js'

const distDir = dirname(fileURLToPath(import.meta.url))
const warmUp = Number(process.env['COUNT_WARMUP'] ?? '10000')
const measured = Number(process.env['COUNT_MEASURED'] ?? '3000')
const heapProf = process.env['COUNT_HEAP_PROF']
/** COUNT_HEAP_SURVIVORS=1: the heap profile keeps only what no scavenge collected (see the header) */
const survivors = process.env['COUNT_HEAP_SURVIVORS'] === '1'
/** where a profile goes (either profiler's); undefined: count instructions under valgrind */
const profileDir = process.env['COUNT_CPU_PROF'] ?? heapProf
/** the inspector port of the server under the heap profiler */
const inspectPort = heapProf === undefined ? 0 : await freePort()
const profilerOptions = (name: string): string => heapProf !== undefined
  ? `--inspect=127.0.0.1:${inspectPort}`
  : `--cpu-prof --cpu-prof-dir=${profileDir} --cpu-prof-name=${name}.cpuprofile`
const dir = mkdtempSync(join(tmpdir(), 'keygate-count-'))
/** COUNT_NODE_ARGS: node's own options for every server counted, e.g. V8's --no-concurrent-recompilation */
const nodeArgs = nodeArgsFrom('COUNT_NODE_ARGS')
const launcher = (name: string): Launcher | undefined => profileDir !== undefined
  ? { prefix: ['env', `NODE_OPTIONS=${profilerOptions(name)}`], nodeArgs, readyTimeoutMs: 120_000 }
  : {
      prefix: [
        'valgrind', '--tool=callgrind', '--separate-threads=yes', '--dump-instr=no',
        `--callgrind-out-file=${join(dir, name)}.%p`
      ],
      nodeArgs,
      readyTimeoutMs: 600_000
    }

/** BENCH_COMPARE's build, for the `*-compare` targets */
function compareCli (): string {
  const dir = process.env['BENCH_COMPARE']
  if (dir === undefined || dir === '') {
    throw new Error('the -compare targets need BENCH_COMPARE=<a built keygate checkout>')
  }
  return join(resolve(dir), 'dist/cli/main.js')
}

const { origin, ctx } = await startOriginContext(distDir)
const personal = { authorization: `Bearer ${benchKeys.personal.key}` }
const kg = { cache: '{ ttl_ms: 60000 }' }
const cold = { ...kg, redis: 'command_timeout_ms: 60000', coldKeys: true, usage: { enabled: false } }

interface Target {
  start: () => Promise<RunningServer & { authzPort?: number | undefined }>
  headers: Record<string, string>
  /** headers made for each request (the cold keys' Authorization) */
  headersFor?: () => Record<string, string>
  host?: string
  /** the path asked for; BENCH_PATH (a decision: `/`) unless set */
  path?: string
  authz?: boolean
  usageWrites?: () => Promise<number>
  /** the registry reads (EVALSHA) in the counted window, per request */
  reads?: () => Promise<number>
  /** Envoy's Check calls instead of HTTP requests (bench/grpc-load.ts) */
  grpc?: boolean
}

/** the keygate target's admin port, for its usage writes (`keygate_usage_flushes_total`) */
let usageAdminPort: number | undefined
async function usageWrites (): Promise<number> {
  const scrape = await (await fetch(`http://127.0.0.1:${usageAdminPort ?? 0}/metrics`)).text()
  return Number(/^keygate_usage_flushes_total ([0-9.e+]+)/m.exec(scrape)?.[1])
}
/** the registry's script calls so far: its round trips (keygate.ts) */
async function registryScripts (): Promise<number> {
  return (await registryCalls()).scripts
}

// the cold-keys row (bench/scenarios.ts): every request a key's first in the process, a
// miss and at most one registry round trip (shared by the misses of one turn); warm-up and
// counted requests must not exceed the keys.
// Under valgrind (~50x slower) the default 500 ms command timeout and freshness fail
// reads and drop tracking (a flush and a refill of every key): both at their most.
function coldTarget (name: string, compare = false, requestLog = true): Target {
  return {
    start: async () => {
      coldKeys()
      return await startKeygate(compare ? { ...ctx, keygateCli: compareCli() } : ctx, name, {
        ...cold,
        requestLog,
        launcher: launcher(name)
      })
    },
    headers: {},
    headersFor: () => ({ authorization: nextColdAuthorization() }),
    reads: registryScripts
  }
}

/** the authorizer's cached decision (Traefik's shape), of this build or BENCH_COMPARE's */
function authzTarget (
  name: string, o: { compare?: boolean, logSample?: number, assertion?: KeygateOptions['assertion'] } = {}
): Target {
  return {
    start: async () => {
      const s = await startKeygate(o.compare === true ? { ...ctx, keygateCli: compareCli() } : ctx, name, {
        ...kg, authz: true, logSample: o.logSample, assertion: o.assertion, launcher: launcher(name)
      })
      return { ...s, port: s.authzPort ?? 0 }
    },
    headers: traefikDecision(benchKeys.personal.key),
    authz: true
  }
}

const targets: Record<string, Target> = {
  baseline: {
    start: async () => await startBaseline(distDir, ctx.originUrl, undefined, launcher('baseline')),
    headers: {},
    host: '127.0.0.1'
  },
  'fastify-proxy': {
    start: async () => await startBaseline(distDir, ctx.originUrl, undefined, launcher('fastify-proxy'), 'http-proxy'),
    headers: {},
    host: '127.0.0.1'
  },
  reference: {
    start: async () => await startBaseline(distDir, ctx.originUrl, undefined, launcher('reference'), 'reply-from'),
    headers: {},
    host: '127.0.0.1'
  },
  keygate: {
    start: async () => {
      const s = await startKeygate(ctx, 'keygate', { ...kg, launcher: launcher('keygate') })
      usageAdminPort = s.adminPort
      return s
    },
    headers: personal,
    usageWrites
  },
  // the cold-keys row (bench/scenarios.ts): every request a key's first in the process, a
  // miss and one registry read; warm-up and counted requests must not exceed the keys.
  // Under valgrind (~50x slower) the default 500 ms command timeout and freshness fail
  // reads and drop tracking (a flush and a refill of every key): both at their most.
  'keygate-cold': coldTarget('keygate-cold'),
  'keygate-cold-compare': coldTarget('keygate-cold-compare', true),
  'keygate-cold-nokeylog': coldTarget('keygate-cold-nokeylog', false, false),
  'keygate-compare': {
    start: async () =>
      await startKeygate({ ...ctx, keygateCli: compareCli() }, 'keygate-compare', {
        ...kg,
        launcher: launcher('keygate-compare')
      }),
    headers: personal
  },
  'keygate-tracing-compare': {
    start: async () =>
      await startKeygate({ ...ctx, keygateCli: compareCli() }, 'keygate-tracing-compare', {
        ...kg,
        tracing: { sampleRatio: 1 },
        launcher: launcher('keygate-tracing-compare')
      }),
    headers: personal
  },
  'authz-compare': authzTarget('authz-compare', { compare: true }),
  'keygate-nolog': {
    start: async () =>
      await startKeygate(ctx, 'keygate-nolog', { ...kg, logLevel: 'warn', launcher: launcher('keygate-nolog') }),
    headers: personal
  },
  'keygate-log-sampled': {
    start: async () =>
      await startKeygate(ctx, 'keygate-log-sampled', {
        ...kg, logSample: 0.01, launcher: launcher('keygate-log-sampled')
      }),
    headers: personal
  },
  'keygate-nousage': {
    start: async () =>
      await startKeygate(ctx, 'keygate-nousage', {
        ...kg,
        usage: { enabled: false },
        launcher: launcher('keygate-nousage')
      }),
    headers: personal
  },
  'keygate-nokeylog': {
    start: async () =>
      await startKeygate(ctx, 'keygate-nokeylog', { ...kg, requestLog: false, launcher: launcher('keygate-nokeylog') }),
    headers: personal
  },
  'keygate-nowebhooks': {
    start: async () =>
      await startKeygate(ctx, 'keygate-nowebhooks', {
        ...kg, webhooks: false, launcher: launcher('keygate-nowebhooks')
      }),
    headers: personal
  },
  // the decision and the proxy alone: every feature a deployment can turn off is off (the log line, usage
  // counting, the per-key request log, webhooks)
  'keygate-bare': {
    start: async () =>
      await startKeygate(ctx, 'keygate-bare', {
        ...kg,
        logLevel: 'warn',
        usage: { enabled: false },
        requestLog: false,
        webhooks: false,
        launcher: launcher('keygate-bare')
      }),
    headers: personal
  },
  // the rate-limit and quota rows (bench/scenarios.ts): usage counting off, so against keygate-nousage
  'keygate-limited': {
    start: async () =>
      await startKeygate(ctx, 'keygate-limited', {
        ...kg,
        usage: { enabled: false },
        redis: 'command_timeout_ms: 60000',
        launcher: launcher('keygate-limited')
      }),
    headers: { authorization: `Bearer ${benchKeys.limited.key}` },
    reads: registryScripts
  },
  'keygate-metered': {
    start: async () =>
      await startKeygate(ctx, 'keygate-metered', {
        ...kg,
        usage: { enabled: false },
        redis: 'command_timeout_ms: 60000',
        launcher: launcher('keygate-metered')
      }),
    headers: { authorization: `Bearer ${benchKeys.metered.key}` },
    reads: registryScripts
  },
  'keygate-strip': {
    start: async () =>
      await startKeygate(ctx, 'keygate-strip', { ...kg, stripPrefix: true, launcher: launcher('keygate-strip') }),
    headers: personal,
    path: STRIP_PREFIX + BENCH_PATH
  },
  'keygate-targets': {
    start: async () =>
      await startKeygate(ctx, 'keygate-targets', {
        ...kg,
        upstream: threeTargets(ctx),
        launcher: launcher('keygate-targets')
      }),
    headers: personal
  },
  'keygate-shadow': {
    start: async () =>
      await startKeygate(ctx, 'keygate-shadow', { ...kg, shadowRules: 10, launcher: launcher('keygate-shadow') }),
    headers: personal
  },
  'keygate-tracing': {
    start: async () =>
      await startKeygate(ctx, 'keygate-tracing', {
        ...kg,
        tracing: { sampleRatio: 1, protocol: 'http/protobuf' },
        launcher: launcher('keygate-tracing')
      }),
    headers: personal
  },
  'keygate-tracing-json': {
    start: async () =>
      await startKeygate(ctx, 'keygate-tracing-json', {
        ...kg,
        tracing: { sampleRatio: 1, protocol: 'http/json' },
        launcher: launcher('keygate-tracing-json')
      }),
    headers: personal
  },
  authz: authzTarget('authz'),
  'authz-log-sampled': authzTarget('authz-log-sampled', { logSample: 0.01 }),
  'authz-assert-request': authzTarget('authz-assert-request', { assertion: { bind: 'request', alg: 'ES256' } }),
  hello: {
    start: async () => await startHello(distDir, undefined, launcher('hello')),
    headers: traefikDecision(benchKeys.personal.key),
    host: '127.0.0.1',
    authz: true
  },
  'authz-grpc': {
    start: async () => {
      const s = await startKeygate(ctx, 'authz-grpc', {
        ...kg,
        authz: true,
        authzGrpc: true,
        launcher: launcher('authz-grpc')
      })
      return { ...s, port: s.authzGrpcPort ?? 0 }
    },
    headers: {},
    grpc: true
  },
  // (the floors are told their listen address in HOST, as the hello targets are)
  'grpc-hello': {
    start: async () => await startGrpcHello(distDir, undefined, 'proto-loader', launcher('grpc-hello')),
    headers: {},
    host: '127.0.0.1',
    grpc: true
  },
  'grpc-hello-lean': {
    start: async () => await startGrpcHello(distDir, undefined, 'lean', launcher('grpc-hello-lean')),
    headers: {},
    host: '127.0.0.1',
    grpc: true
  },
  'connect-hello': {
    start: async () => await startGrpcHello(distDir, undefined, 'connect', launcher('connect-hello')),
    headers: {},
    host: '127.0.0.1',
    grpc: true
  },
  'hello-node-http': {
    start: async () => await startHello(distDir, undefined, launcher('hello-node-http'), 'node-http'),
    headers: traefikDecision(benchKeys.personal.key),
    host: '127.0.0.1',
    authz: true
  }
}

/** A node of V8's sampling heap profile. */
interface HeapNode { selfSize: number, children: HeapNode[] }

function totalSize (node: HeapNode): number {
  let n = node.selfSize
  for (const c of node.children) n += totalSize(c)
  return n
}

/** The Chrome DevTools Protocol over the server's inspector WebSocket (Node's own WebSocket). */
class Inspector {
  private next = 1
  private readonly waiting = new Map<number, (result: unknown) => void>()
  private constructor (private readonly socket: WebSocket) {
    socket.addEventListener('message', (event) => {
      const m = JSON.parse(String(event.data)) as { id?: number, result?: unknown }
      if (m.id !== undefined) this.waiting.get(m.id)?.(m.result)
    })
  }

  static async open (port: number): Promise<Inspector> {
    const [target] = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json() as
      Array<{ webSocketDebuggerUrl: string }>
    if (target === undefined) throw new Error('no inspector target')
    const socket = new WebSocket(target.webSocketDebuggerUrl)
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve)
      socket.addEventListener('error', reject)
    })
    return new Inspector(socket)
  }

  async send (method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.next++
    return await new Promise((resolve) => {
      this.waiting.set(id, resolve)
      this.socket.send(JSON.stringify({ id, method, params }))
    })
  }

  close (): void { this.socket.close() }
}

try {
  const rows: Array<Counted & { target: string }> = []
  for (const name of process.argv.slice(2)) {
    const t = targets[name]
    if (t === undefined) throw new Error(`unknown target ${name}: ${Object.keys(targets).join(', ')}`)
    if (profileDir !== undefined) {
      const server = await t.start()
      const before = await registryCalls()
      const url = `http://127.0.0.1:${server.port}${t.path ?? (t.authz === true ? '/' : BENCH_PATH)}`
      const load = async (amount: number): Promise<void> => {
        if (t.grpc === true) await grpcLoad(server.port, { amount })
        else {
          await autocannon({
            url,
            headers: t.headers,
            connections: 50,
            amount,
            ...(t.headersFor === undefined ? {} : { requests: [{ setupRequest: perRequest(t.headersFor) }] })
          })
        }
      }
      await load(heapProf === undefined ? warmUp + measured : warmUp)
      if (heapProf !== undefined) {
        const inspector = await Inspector.open(inspectPort)
        await inspector.send('HeapProfiler.startSampling', {
          samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !survivors
        })
        await load(measured)
        const { profile } = await inspector.send('HeapProfiler.stopSampling') as { profile: { head: HeapNode } }
        inspector.close()
        mkdirSync(heapProf, { recursive: true })
        writeFileSync(join(heapProf, `${name}.heapprofile`), JSON.stringify(profile))
        const what = survivors ? 'bytes no scavenge collected' : 'bytes allocated'
        process.stdout.write(`${name}: ${(totalSize(profile.head) / measured).toFixed(0)} ${what}/request\n`)
      }
      const scripts = (await registryCalls()).scripts - before.scripts
      await server.stop()
      process.stdout.write(
        `${name}: profile in ${profileDir}, ${(scripts / (warmUp + measured)).toFixed(3)} script calls/request\n`
      )
      continue
    }
    const started = Date.now()
    const c = await count({
      name,
      start: t.start,
      host: t.host ?? process.env['HOST'],
      headers: t.headers,
      headersFor: t.headersFor,
      dir,
      amounts: { warmUp, measured },
      path: t.path ?? (t.authz === true ? '/' : BENCH_PATH),
      reads: t.usageWrites ?? t.reads,
      grpc: t.grpc
    })
    rows.push({ ...c, target: name })
    // (keygate: the usage counter's timed writes that fell in the counted window, each counted in with the requests)
    const writes = c.registryReads === undefined
      ? ''
      : t.usageWrites !== undefined
        ? `, ${c.registryReads} usage writes in the counted window`
        : `, ${(c.registryReads / measured).toFixed(3)} registry script calls (round trips)/request ` +
          'in the counted window'
    process.stdout.write(
      `${name}: main thread ${(c.mainPerReq / 1000).toFixed(1)}k instructions/request, ` +
      `all threads ${(c.allPerReq / 1000).toFixed(1)}k${writes} (${((Date.now() - started) / 1000).toFixed(0)} s)` +
      `${c.failures.length > 0 ? ` (${c.failures.join('; ')})` : ''}\n`
    )
  }
} finally {
  await origin.stop()
  await stopAll()
  if (process.env['COUNT_KEEP'] === '1') process.stdout.write(`callgrind files: ${dir}\n`)
  else rmSync(dir, { recursive: true, force: true })
}
