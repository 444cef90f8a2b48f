// Benchmark runner: starts the origin stub and every scenario's server, then
// measures them in interleaved rounds (A, B, A, B, ...) with autocannon from
// this process, and prints a Markdown table (stdout) and optionally JSON.
// Progress goes to stderr. Exits non-zero if any scenario saw errors.
import { writeFile } from 'node:fs/promises'
import { cpus, release, type, arch } from 'node:os'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as delay } from 'node:timers/promises'
import { KNOBS, readConfig, type BenchConfig } from './config.js'
import { memory, propagation, sharedCore } from './extras.js'
import { grpcAuthz } from './grpc-authz.js'
import { soak } from './soak.js'
import { usageFlush } from './usage-flush.js'
import { flood } from './flood.js'
import { warmUp } from './warm-up.js'
import { instructions } from './instructions.js'
import { callsSince, registryCalls } from './keygate.js'
import { startCpuMeter } from './cpu-meter.js'
import { runRound, type LoadSettings, type RoundTarget } from './load.js'
import { applyPinning } from './pinning.js'
import { killAllSync, stopAll, unexpectedExits } from './process.js'
import { peakRssKiB } from './procfs.js'
import { findProblems, markdown, type RunInfo } from './report.js'
import {
  authorizerScenarios,
  baselineScenario,
  compareScenarios,
  controlScenario,
  fastifyProxyScenario,
  helloScenario,
  keygateScenarios,
  referenceScenario
} from './scenarios.js'
import { BENCH_PATH, startOriginContext } from './servers.js'
import { cpuPerReq, summarize, type RoundMeasure, type ScenarioMeasures } from './summary.js'
import type { RunningServer, Scenario, ScenarioContext } from './types.js'

const PAUSE_BETWEEN_ROUNDS_MS = 500

const pct = (value: number | undefined): string => value === undefined ? 'n/a' : `${value.toFixed(0)}%`
const log = (message: string): void => { process.stderr.write(`[bench] ${message}\n`) }

function exactCommand (): string {
  const env = KNOBS.flatMap((name) => process.env[name] === undefined ? [] : [`${name}=${process.env[name] ?? ''}`])
  const args = process.argv.slice(2)
  const base = process.env['npm_lifecycle_event'] === 'bench'
    ? ['npm', 'run', 'bench', ...(args.length > 0 ? ['--', ...args] : [])]
    : ['node', relative(process.cwd(), process.argv[1] ?? 'bench/dist/run.js'), ...args]
  return [...env, ...base].join(' ')
}

function runInfo (config: BenchConfig, pinningNote: string): RunInfo {
  const cores = cpus()
  return {
    date: new Date().toISOString(),
    machine: `${cores[0]?.model.trim() ?? 'unknown CPU'}, ${cores.length} cores`,
    node: process.version,
    os: `${type()} ${release()} ${arch()}`,
    command: exactCommand(),
    pinning: pinningNote,
    settings: `autocannon ${config.connections} connections, pipelining ${config.pipelining}, ` +
      `${config.rounds} interleaved rounds × ${config.durationSec} s per scenario, ` +
      (config.freshProcesses
        ? `each on a new server process after its own ${config.warmupSec} s warm-up, `
        : `one server process per scenario for the whole run after one ${config.warmupSec} s warm-up, `) +
      `GET ${BENCH_PATH}, origin stub in its own process`
  }
}

interface Started { scenario: Scenario, server: RunningServer, url: string }

/** A filter part matches a name it is in; one ending in `$`, a name ending with the rest. */
const matches = (name: string, part: string): boolean =>
  part.endsWith('$') ? name.endsWith(part.slice(0, -1)) : name.includes(part)

/**
 * The baseline, the scenarios whose name contains the filter (or one of its
 * `|`-separated parts, see `matches`), and the rows they are compared with, in the list's order.
 */
function selected (filter: string | undefined, all: readonly Scenario[]): Scenario[] {
  const parts = filter?.split('|').filter((p) => p !== '')
  const names = new Set(
    all.filter((s, i) => i === 0 || parts === undefined || parts.some((p) => matches(s.name, p))).map((s) => s.name)
  )
  for (const s of all) if (names.has(s.name) && s.compareWith !== undefined) names.add(s.compareWith)
  for (const name of names) {
    if (!all.some((s) => s.name === name)) {
      throw new Error(`a scenario is compared with "${name}", which is not in the list`)
    }
  }
  return all.filter((s) => names.has(s.name))
}

/** ", nginx 30 + keygate 40" for a server made of parts */
function partsNote (m: RoundMeasure): string {
  const parts = Object.entries(m.partsCpuPct ?? {}).map(
    ([label, pct]) => `${label} ${(cpuPerReq({ serverCpuPct: pct, reqPerSec: m.reqPerSec }) ?? 0).toFixed(0)}`
  )
  return parts.length === 0 ? '' : `: ${parts.join(' + ')}`
}

async function start (scenario: Scenario): Promise<Started> {
  const server = await scenario.start()
  return { scenario, server, url: `http://127.0.0.1:${server.port}${scenario.path ?? BENCH_PATH}` }
}

/**
 * Every scenario's rounds, interleaved; a scenario's server is started and warmed up just before its
 * round when `running` holds none. With fresh processes (the default) it lives for that warm-up and
 * round only, so no other row's server idles on the core under test (with every row's server kept
 * alive, some 40 idle servers, each woken by its own timers, shared that core with the one measured);
 * otherwise it stays in `running` for the whole run.
 */
async function measure (
  config: BenchConfig, scenarios: readonly Scenario[], running: Map<number, Started>, helperPids: number[]
): Promise<ScenarioMeasures[]> {
  const load = (durationSec: number): LoadSettings =>
    ({ connections: config.connections, pipelining: config.pipelining, durationSec })
  const target = (s: Started): RoundTarget => ({
    url: s.url,
    headers: s.scenario.headers,
    headersFor: s.scenario.headersFor,
    expectedStatus: s.scenario.expectedStatus
  })

  const measures: ScenarioMeasures[] = scenarios.map((scenario) => ({
    name: scenario.name,
    expectedStatus: scenario.expectedStatus,
    warmups: [],
    rounds: [],
    peakRssKiB: undefined
  }))
  const warmUp = async (i: number, s: Started): Promise<void> => {
    log(`warm-up ${s.scenario.name} (${config.warmupSec} s)`)
    measures[i]?.warmups.push(await runRound(target(s), load(config.warmupSec)))
    await delay(PAUSE_BETWEEN_ROUNDS_MS)
  }
  // a scenario's peak RSS, kept across its processes
  const notePeakRss = (i: number, s: Started): void => {
    const m = measures[i]
    const peak = s.server.pid === undefined ? undefined : peakRssKiB(s.server.pid)
    if (m !== undefined && peak !== undefined) m.peakRssKiB = Math.max(m.peakRssKiB ?? 0, peak)
  }

  for (let round = 1; round <= config.rounds; round++) {
    // Rotate who goes first each round, so no scenario always gets the same slot
    // (the first slot of a round measured ~20% faster here, whatever ran in it).
    const order = scenarios.map((_, i) => (i + round - 1) % scenarios.length)
    for (const i of order) {
      const scenario = scenarios[i] as Scenario
      let s = running.get(i)
      if (s === undefined) {
        // (fresh: a new process for each round, since on this kind of VM one process can run 10-15%
        // faster or slower than an identical one for its whole life: docs/benchmarks.md)
        log(`starting ${scenario.name}`)
        s = await start(scenario)
        running.set(i, s)
        await warmUp(i, s)
      }
      const callsBefore = await registryCalls()
      const missesBefore = await s.server.cacheMisses?.()
      const meter = startCpuMeter(s.server.parts ?? s.server.pid, helperPids)
      const result = await runRound(target(s), load(config.durationSec))
      const cpu = meter()
      const calls = callsSince(callsBefore, await registryCalls())
      const missesAfter = missesBefore === undefined ? undefined : await s.server.cacheMisses?.()
      const cacheMisses = missesBefore === undefined || missesAfter === undefined
        ? undefined
        : missesAfter - missesBefore
      const measured = {
        ...result,
        round,
        serverCpuPct: cpu.serverPct,
        loadgenCpuPct: cpu.loadgenPct,
        otherCpuPct: cpu.otherPct,
        registryScripts: calls.scripts,
        registryRecords: calls.records,
        cacheMisses,
        partsCpuPct: cpu.partsPct
      }
      measures[i]?.rounds.push(measured)
      const usPerReq = cpuPerReq(measured)
      const bad = result.unexpectedStatus + result.errors > 0
        ? `  !!! ${result.unexpectedStatus} unexpected status (by status: ${JSON.stringify(result.statusCounts)}), ` +
          `${result.errors} errors`
        : ''
      log(`round ${round}/${config.rounds} ${scenario.name}: ${result.reqPerSec.toFixed(0)} req/s, ` +
        `p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, CPU server ${pct(cpu.serverPct)} ` +
        `(${usPerReq === undefined ? 'n/a' : usPerReq.toFixed(0)} µs/req${partsNote(measured)}) ` +
        `loadgen ${pct(cpu.loadgenPct)} other ${pct(cpu.otherPct)}${bad}`)
      if (config.freshProcesses) {
        notePeakRss(i, s)
        running.delete(i)
        await s.server.stop()
      }
      await delay(PAUSE_BETWEEN_ROUNDS_MS)
    }
  }

  for (const [i, s] of running) notePeakRss(i, s)
  return measures
}

async function stopRunning (running: Map<number, Started>): Promise<void> {
  const servers = [...running.values()]
  running.clear()
  await Promise.all(servers.map(async (s) => await s.server.stop()))
}

async function main (): Promise<number> {
  const config = readConfig(process.env, process.argv.slice(2))
  const pinning = applyPinning(config.pin)
  log(`CPU pinning ${pinning.note}`)

  const distDir = fileURLToPath(new URL('.', import.meta.url))
  /** the servers alive, by scenario (measure starts them) */
  const running = new Map<number, Started>()
  try {
    const { origin, ctx: pinned } = await startOriginContext(distDir, pinning)
    const ctx: ScenarioContext = {
      ...pinned,
      compareCli: process.env.BENCH_COMPARE === undefined || process.env.BENCH_COMPARE === ''
        ? undefined
        : `${process.env.BENCH_COMPARE.replace(/\/$/, '')}/dist/cli/main.js`
    }
    const scenarios = selected(config.filter, [
      baselineScenario(ctx), controlScenario(ctx), fastifyProxyScenario(ctx), referenceScenario(ctx),
      ...keygateScenarios(ctx), helloScenario(ctx), ...authorizerScenarios(ctx), ...compareScenarios(ctx)
    ])
    const measures = await measure(config, scenarios, running, [origin.pid])
    const summaries = scenarios.map((scenario, i) => {
      const against = scenario.compareWith ?? scenarios[0]?.name
      const j = scenarios.findIndex((x) => x.name === against)
      const reference = scenarios[j]
      const label = reference === undefined
        ? 'baseline'
        : reference.label ?? reference.name.split(':')[0] ?? reference.name
      return { ...summarize(measures[i] as ScenarioMeasures, measures[j], label), target: scenario.target }
    })
    const problems = findProblems(summaries, unexpectedExits())
    for (const [i, scenario] of scenarios.entries()) {
      const summary = summaries[i]
      const maxScripts = scenario.maxScriptsPer1k
      if (maxScripts !== undefined && summary !== undefined && !(summary.scriptsPer1k <= maxScripts)) {
        problems.failures.push(`"${scenario.name}": ${summary.scriptsPer1k.toFixed(2)} registry script calls ` +
          `per 1,000 responses, above the ${maxScripts} target`)
      }
      const maxRecords = scenario.maxRecordsPer1k
      if (maxRecords !== undefined && summary !== undefined && !(summary.recordsPer1k <= maxRecords)) {
        problems.failures.push(`"${scenario.name}": ${summary.recordsPer1k.toFixed(2)} registry records read ` +
          `per 1,000 responses, above the ${maxRecords} target`)
      }
      const maxPerMiss = scenario.maxScriptsPerMiss
      const perMiss = summary?.scriptsPerMiss
      if (maxPerMiss !== undefined && !(perMiss !== undefined && perMiss <= maxPerMiss)) {
        problems.failures.push(`"${scenario.name}": ${perMiss?.toFixed(3) ?? 'unknown'} registry round trips ` +
          `per cache miss, above the ${maxPerMiss} target`)
      }
    }
    const info = runInfo(config, pinning.note)

    process.stdout.write(markdown(info, summaries, problems))
    // The throughput servers are done; the extras start their own Redis and gateways.
    await stopRunning(running)
    for (const extra of [sharedCore, propagation, memory, warmUp, flood, grpcAuthz, instructions, usageFlush, soak]) {
      if (config.extras(extra.name)) {
        log(`running ${extra.name}`)
        const result = await extra(ctx)
        process.stdout.write('\n' + result.markdown)
        problems.failures.push(...result.failures)
      }
    }
    if (config.jsonOut !== undefined) {
      const json = { ...info, valid: problems.failures.length === 0, problems, config, scenarios: summaries, measures }
      await writeFile(config.jsonOut, JSON.stringify(json, null, 2) + '\n')
      log(`JSON written to ${config.jsonOut}`)
    }
    for (const f of problems.failures) log(`!!! ${f}`)
    return problems.failures.length === 0 ? 0 : 1
  } finally {
    await stopRunning(running)
    await stopAll()
  }
}

let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true
    log(`${signal}: stopping child processes`)
    stopAll().finally(() => process.exit(130))
  })
}
process.once('exit', killAllSync)

main().then(
  (code) => { if (!interrupted) process.exitCode = code },
  (err: unknown) => {
    if (interrupted) return
    log(`failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`)
    process.exitCode = 1
  }
)
