// Reduce per-round measurements to one row per scenario.
import type { RoundResult } from './load.js'
import { mean, median } from './stats.js'
import type { Target } from './types.js'

export interface RoundMeasure extends RoundResult {
  round: number
  /** % of one core used by the server under test during the round. */
  serverCpuPct: number | undefined
  /** % of one core used by the load generator + origin during the round. */
  loadgenCpuPct: number | undefined
  /** % of one core used by anything else on the machine during the round. */
  otherCpuPct: number | undefined
  /** the registry's script calls (round trips) Redis executed during the round (keygate.ts `RegistryCalls`) */
  registryScripts: number
  /** the registry records those scripts read during the round */
  registryRecords: number
  /** the server's cache misses during the round, when it reports them */
  cacheMisses?: number | undefined
  /** each part's % of one core, for a server made of parts (nginx + keygate) */
  partsCpuPct?: Record<string, number> | undefined
}

export interface ScenarioMeasures {
  name: string
  expectedStatus: number | undefined
  /** the warm-up before the first round, and before each later round when its server was restarted */
  warmups: RoundResult[]
  rounds: RoundMeasure[]
  peakRssKiB: number | undefined
}

export interface ScenarioSummary {
  name: string
  /**
   * The row the ratios are against: the baseline, or the scenario's own reference
   * (the fastify hello-world for decision rows), measured in the same rounds.
   */
  comparedWith: string
  /** Mean over rounds. */
  reqPerSec: number
  reqPerSecMin: number
  reqPerSecMax: number
  /** reqPerSec / the reference row's reqPerSec (the baseline unless the row names another). */
  ratio: number
  /**
   * Median over rounds of (this round's req/s / the reference's req/s in the same round).
   * Each pair is measured minutes apart at most, so it survives the slow drifts in
   * machine speed that make means over a whole run unreliable on a shared VM.
   */
  pairedRatio: number
  /**
   * Median over rounds of the server's CPU time per response (µs): the cost of a
   * request, which does not move with the load generator's share of the machine or
   * with VM steal (time the vCPU did not run is not charged to the process).
   */
  cpuUsPerReq: number | undefined
  /**
   * Median over rounds of (the reference's CPU µs per response / this one's, same round):
   * the throughput ratio a saturated core would give, the steadier estimate on a noisy VM.
   */
  pairedCpuRatio: number | undefined
  /** Median over rounds of each round's percentile. */
  p50Ms: number
  p99Ms: number
  /** Summed over the warm-up and all rounds. */
  unexpectedStatus: number
  errors: number
  serverCpuPct: number | undefined
  loadgenCpuPct: number | undefined
  otherCpuPct: number | undefined
  peakRssKiB: number | undefined
  /** registry script calls (round trips) per 1,000 responses over the measured rounds */
  scriptsPer1k: number
  /** registry records read per 1,000 responses over the measured rounds */
  recordsPer1k: number
  /**
   * registry script calls (round trips) per cache miss over the measured rounds, for servers that report their misses
   */
  scriptsPerMiss: number | undefined
  /** cache misses per 1,000 responses over the measured rounds, for servers that report them */
  missesPer1k: number | undefined
  /** median over rounds of each part's CPU µs per response, for a server made of parts */
  partsCpuUsPerReq: Record<string, number> | undefined
  /** the scenario's target, reported as met or not */
  target?: Target | undefined
}

/** The server's CPU time per response in one round, in µs (undefined without a CPU reading). */
export const cpuPerReq = (r: Pick<RoundMeasure, 'serverCpuPct' | 'reqPerSec'>): number | undefined =>
  r.serverCpuPct === undefined || r.reqPerSec <= 0 ? undefined : 1e6 * (r.serverCpuPct / 100) / r.reqPerSec

const medianDefined = (values: ReadonlyArray<number | undefined>): number | undefined => {
  const known = values.filter((v): v is number => v !== undefined)
  return known.length === 0 ? undefined : median(known)
}

const meanDefined = (values: ReadonlyArray<number | undefined>): number | undefined =>
  values.every((v): v is number => v !== undefined) && values.length > 0 ? mean(values) : undefined

/**
 * One row: `reference` is the row it is compared with (the baseline, or its own reference), labelled `comparedWith`.
 */
export function summarize (
  measures: ScenarioMeasures, reference: ScenarioMeasures | undefined, comparedWith: string
): ScenarioSummary {
  const rps = measures.rounds.map((r) => r.reqPerSec)
  const reqPerSec = mean(rps)
  const referenceRps = reference === undefined ? reqPerSec : mean(reference.rounds.map((r) => r.reqPerSec))
  // each round with the reference's round of the same number (itself, for the baseline)
  const pairs = measures.rounds.map((r) => ({ r, b: reference?.rounds.find((x) => x.round === r.round) ?? r }))
  const paired = pairs.map(({ r, b }) => r.reqPerSec / b.reqPerSec)
  const pairedCpu = pairs.map(({ r, b }) => {
    const mine = cpuPerReq(r)
    const theirs = cpuPerReq(b)
    return mine === undefined || theirs === undefined ? undefined : theirs / mine
  })
  const all = [...measures.warmups, ...measures.rounds]
  return {
    name: measures.name,
    comparedWith,
    reqPerSec,
    reqPerSecMin: Math.min(...rps),
    reqPerSecMax: Math.max(...rps),
    ratio: reqPerSec / referenceRps,
    pairedRatio: median(paired),
    cpuUsPerReq: medianDefined(measures.rounds.map(cpuPerReq)),
    pairedCpuRatio: medianDefined(pairedCpu),
    p50Ms: median(measures.rounds.map((r) => r.p50Ms)),
    p99Ms: median(measures.rounds.map((r) => r.p99Ms)),
    unexpectedStatus: all.reduce((sum, r) => sum + r.unexpectedStatus, 0),
    errors: all.reduce((sum, r) => sum + r.errors, 0),
    serverCpuPct: meanDefined(measures.rounds.map((r) => r.serverCpuPct)),
    loadgenCpuPct: meanDefined(measures.rounds.map((r) => r.loadgenCpuPct)),
    otherCpuPct: meanDefined(measures.rounds.map((r) => r.otherCpuPct)),
    peakRssKiB: measures.peakRssKiB,
    scriptsPer1k: per1k(measures.rounds, (r) => r.registryScripts),
    recordsPer1k: per1k(measures.rounds, (r) => r.registryRecords),
    partsCpuUsPerReq: partsPerReq(measures.rounds),
    ...missRates(measures.rounds)
  }
}

/** a count over the rounds per 1,000 of their responses */
function per1k (rounds: readonly RoundMeasure[], count: (r: RoundMeasure) => number): number {
  return 1000 * rounds.reduce((sum, r) => sum + count(r), 0) /
    Math.max(1, rounds.reduce((sum, r) => sum + r.responses, 0))
}

function missRates (
  rounds: readonly RoundMeasure[]
): { scriptsPerMiss: number | undefined, missesPer1k: number | undefined } {
  if (rounds.length === 0 || rounds.some((r) => r.cacheMisses === undefined)) {
    return { scriptsPerMiss: undefined, missesPer1k: undefined }
  }
  const misses = rounds.reduce((sum, r) => sum + (r.cacheMisses ?? 0), 0)
  const scripts = rounds.reduce((sum, r) => sum + r.registryScripts, 0)
  const responses = rounds.reduce((sum, r) => sum + r.responses, 0)
  return {
    scriptsPerMiss: misses > 0 ? scripts / misses : undefined,
    missesPer1k: responses > 0 ? 1000 * misses / responses : undefined
  }
}

function partsPerReq (rounds: readonly RoundMeasure[]): Record<string, number> | undefined {
  const labels = new Set(rounds.flatMap((r) => Object.keys(r.partsCpuPct ?? {})))
  if (labels.size === 0) return undefined
  const out: Record<string, number> = {}
  for (const label of labels) {
    const perReq = medianDefined(rounds.map((r) => {
      const pct = r.partsCpuPct?.[label]
      return pct === undefined ? undefined : cpuPerReq({ serverCpuPct: pct, reqPerSec: r.reqPerSec })
    }))
    if (perReq !== undefined) out[label] = perReq
  }
  return out
}
