// The gRPC authorizer beside the HTTP authorizer (docs/authorizer-grpc.md): one keygate
// process with both listeners, pinned to the server core, the personal key cached. In
// alternating rounds, the HTTP authorizer's decisions (autocannon, Envoy's HTTP shape: its
// own target, the key in Authorization) and the gRPC authorizer's (Envoy's Check, from a
// grpc-js loop in this process: CALLS calls in flight over CHANNELS HTTP/2 connections,
// as an Envoy with a few connections to the cluster sends them). The figure is keygate's
// CPU time per decision, from /proc: it does not move with the load generator's own cost
// (grpc-js's client is dearer per call than autocannon). A process answering fewer
// requests a second spends more CPU on each (fewer answers share an event-loop turn), so
// each round also loads the HTTP authorizer at the rate the gRPC loop reached: the ratio
// is taken at the same rate. Target: the gRPC decision costs no more CPU than the HTTP
// one (HTTP's CPU per decision over gRPC's, at the same rate, >= 1).
// The floors: grpc-js answering the same Check with OK and no decision (bench/grpc-hello.ts,
// pinned the same way), at that rate too, with proto-loader's codec and with keygate's; and
// Connect for Node doing the same (bench/connect-hello.ts). The load (bench/grpc-load.ts) is
// the same grpc-js client for every gRPC row.
import type { ExtraResult } from './extras.js'
import { benchKeys, startKeygate } from './keygate.js'
import { CALLS, CHANNELS, grpcLoad } from './grpc-load.js'
import { runRound } from './load.js'
import { machineBusySeconds, treeCpuSeconds } from './procfs.js'
import { BENCH_PATH, startGrpcHello } from './servers.js'
import { median } from './stats.js'
import type { ScenarioContext } from './types.js'

const ROUNDS = 4
const ROUND_SEC = 5
const WARMUP_SEC = 5

/** `otherPct`: % of a core the rest of the machine used (neither the server measured nor the runner) */
interface Measure { perSec: number, cpuUsPerDecision: number, refused: number, otherPct: number }

type Load = () => Promise<{ answered: number, refused: number }>

const runnerSeconds = (): number => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1e6
}

async function measured (pid: number | undefined, load: Load): Promise<Measure> {
  if (pid === undefined) throw new Error('grpcAuthz: no server pid')
  const cpu0 = treeCpuSeconds(pid) ?? Number.NaN
  const runner0 = runnerSeconds()
  const machine0 = machineBusySeconds() ?? Number.NaN
  const t0 = performance.now()
  const { answered, refused } = await load()
  const wall = (performance.now() - t0) / 1000
  const cpu = (treeCpuSeconds(pid) ?? Number.NaN) - cpu0
  const other = (machineBusySeconds() ?? Number.NaN) - machine0 - cpu - (runnerSeconds() - runner0)
  return { perSec: answered / wall, cpuUsPerDecision: (cpu * 1e6) / answered, refused, otherPct: 100 * other / wall }
}

export async function grpcAuthz (ctx: ScenarioContext): Promise<ExtraResult> {
  const gw = await startKeygate(ctx, 'keygate-grpc-authz', { authz: true, authzGrpc: true })
  const floor = await startGrpcHello(ctx.distDir, ctx.serverCpus, 'proto-loader')
  const leanFloor = await startGrpcHello(ctx.distDir, ctx.serverCpus, 'lean')
  const connectFloor = await startGrpcHello(ctx.distDir, ctx.serverCpus, 'connect')
  try {
    const grpcPort = gw.authzGrpcPort ?? 0
    const httpRound = async (sec: number, rate?: number): Promise<{ answered: number, refused: number }> => {
      const r = await runRound({
        url: `http://127.0.0.1:${gw.authzPort ?? 0}${BENCH_PATH}`,
        headers: { authorization: `Bearer ${benchKeys.personal.key}` },
        expectedStatus: 200
      }, { connections: CALLS, pipelining: 1, durationSec: sec, ...(rate === undefined ? {} : { overallRate: rate }) })
      return { answered: r.responses, refused: r.unexpectedStatus + r.errors }
    }
    await httpRound(WARMUP_SEC)
    for (const port of [grpcPort, floor.port, leanFloor.port, connectFloor.port]) {
      await grpcLoad(port, { sec: WARMUP_SEC })
    }
    const http: Measure[] = []
    const rpc: Measure[] = []
    const sameRate: Measure[] = []
    const floors: Measure[] = []
    const leanFloors: Measure[] = []
    const connectFloors: Measure[] = []
    for (let r = 0; r < ROUNDS; r++) {
      http.push(await measured(gw.pid, async () => await httpRound(ROUND_SEC)))
      const g = await measured(gw.pid, async () => await grpcLoad(grpcPort, { sec: ROUND_SEC }))
      rpc.push(g)
      const rate = Math.max(1, Math.round(g.perSec))
      sameRate.push(await measured(gw.pid, async () => await httpRound(ROUND_SEC, rate)))
      floors.push(await measured(floor.pid, async () => await grpcLoad(floor.port, { sec: ROUND_SEC, rate })))
      leanFloors.push(await measured(leanFloor.pid,
        async () => await grpcLoad(leanFloor.port, { sec: ROUND_SEC, rate })))
      connectFloors.push(await measured(connectFloor.pid,
        async () => await grpcLoad(connectFloor.port, { sec: ROUND_SEC, rate })))
    }
    const ratioOf = (ms: Measure[]): number =>
      median(ms.map((h, i) => h.cpuUsPerDecision / (rpc[i] as Measure).cpuUsPerDecision))
    const ratio = ratioOf(sameRate)
    const row = (name: string, ms: Measure[], r: string): string =>
      `| ${name} | ${median(ms.map((m) => m.perSec)).toFixed(0)} | ` +
      `${median(ms.map((m) => m.cpuUsPerDecision)).toFixed(1)} | ${r} | ` +
      `${median(ms.map((m) => m.otherPct)).toFixed(0)}% | ` +
      `${ms.reduce((s, m) => s + m.refused, 0)} |`
    const markdown = [
      '### The gRPC authorizer beside the HTTP authorizer (one process, personal key cached)',
      '',
      '| decisions | decisions/s | server CPU per decision (µs) | this CPU / gRPC CPU (paired) | other CPU | ' +
        'refused or failed |',
      '|---|---:|---:|---:|---:|---:|',
      row('HTTP authorizer (autocannon, 50 connections, at full speed)', http, `${ratioOf(http).toFixed(2)}×`),
      row('HTTP authorizer at the gRPC row\'s rate', sameRate, `**${ratio.toFixed(2)}×**`),
      row(`gRPC authorizer (grpc-js, ${CALLS} calls in flight on ${CHANNELS} channels)`, rpc, '1.00×'),
      row('grpc-js floor: Check answered OK, no decision, proto-loader\'s codec, at the gRPC row\'s rate', floors,
        `${ratioOf(floors).toFixed(2)}×`),
      row('grpc-js floor, keygate\'s Check codec, at the gRPC row\'s rate', leanFloors,
        `${ratioOf(leanFloors).toFixed(2)}×`),
      row('Connect floor (@connectrpc/connect-node, gRPC protocol, node:http2), at the gRPC row\'s rate',
        connectFloors, `${ratioOf(connectFloors).toFixed(2)}×`),
      '',
      `${ROUNDS} rounds of ${ROUND_SEC} s (HTTP, gRPC, HTTP at gRPC's rate, the three floors at that rate) after ` +
      `${WARMUP_SEC} s of each; medians over rounds. The gRPC row's rate is bounded by the grpc-js client in the ` +
      'runner. Other CPU: % of a core the rest of the machine used meanwhile (not the server, not the runner).',
      ''
    ].join('\n')
    const failures: string[] = []
    if (!(ratio >= 1)) {
      failures.push(`gRPC authorizer: the HTTP authorizer's CPU per decision at the same rate is ${ratio.toFixed(2)}×` +
        ' the gRPC one\'s, below 1')
    }
    if (rpc.some((m) => m.refused > 0)) failures.push('gRPC authorizer: some decisions were not OK')
    if ([...floors, ...leanFloors, ...connectFloors].some((m) => m.refused > 0)) {
      failures.push('gRPC floors: some calls were not OK')
    }
    return { markdown, failures }
  } finally {
    await gw.stop()
    await floor.stop()
    await leanFloor.stop()
    await connectFloor.stop()
  }
}
