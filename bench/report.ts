// Render results: Markdown for humans (stdout), JSON for machines (BENCH_OUT).
import type { ScenarioSummary } from './summary.js'
import type { Target } from './types.js'

export interface RunInfo {
  date: string
  machine: string
  node: string
  os: string
  command: string
  pinning: string
  settings: string
}

const SATURATED_PCT = 90
const NOISY_PCT = 10

const fixed = (value: number | undefined, digits: number): string =>
  value === undefined || Number.isNaN(value) ? 'n/a' : value.toFixed(digits)

function row (s: ScenarioSummary): string {
  const cells = [
    s.name,
    fixed(s.reqPerSec, 0),
    `${fixed(s.reqPerSecMin, 0)}–${fixed(s.reqPerSecMax, 0)}`,
    s.comparedWith,
    `${fixed(s.ratio, 2)}×`,
    `**${fixed(s.pairedRatio, 2)}×**`,
    fixed(s.cpuUsPerReq, 0),
    s.pairedCpuRatio === undefined ? 'n/a' : `**${fixed(s.pairedCpuRatio, 2)}×**`,
    fixed(s.p50Ms, 2),
    fixed(s.p99Ms, 2),
    s.unexpectedStatus > 0 ? `**${s.unexpectedStatus}**` : '0',
    s.errors > 0 ? `**${s.errors}**` : '0',
    s.serverCpuPct === undefined ? 'n/a' : `${fixed(s.serverCpuPct, 0)}%`,
    s.loadgenCpuPct === undefined ? 'n/a' : `${fixed(s.loadgenCpuPct, 0)}%`,
    s.otherCpuPct === undefined ? 'n/a' : `${fixed(s.otherCpuPct, 0)}%`,
    fixed(s.peakRssKiB === undefined ? undefined : s.peakRssKiB / 1024, 1),
    `${fixed(s.scriptsPer1k, 1)} / ${fixed(s.recordsPer1k, 1)}`
  ]
  return `| ${cells.join(' | ')} |`
}

/** One line per targeted row: each figure, its target, met or not. */
function targetLine (s: ScenarioSummary, t: Target): string {
  const checks: string[] = []
  const check = (
    figure: number | undefined, text: string, bound: number, atLeast: boolean, digits: number, unit: string
  ): void => {
    const met = figure !== undefined && (atLeast ? figure >= bound : figure <= bound)
    checks.push(`${text} ${fixed(figure, digits)}${unit} (target ${atLeast ? '≥' : '≤'} ` +
      `${bound.toLocaleString('en')}${unit}): ${met ? 'met' : '**not met**'}`)
  }
  if (t.reqPerSec !== undefined) check(s.reqPerSec, 'req/s', t.reqPerSec, true, 0, '')
  if (t.cpuUsPerReq !== undefined) check(s.cpuUsPerReq, 'CPU', t.cpuUsPerReq, false, 0, ' µs/req')
  if (t.cpuRatio !== undefined) {
    check(s.pairedCpuRatio, `vs ${s.comparedWith} (CPU/req, paired)`, t.cpuRatio, true, 2, '×')
  }
  return `- ${s.name}: ${checks.join('; ')}; req/s paired ${fixed(s.pairedRatio, 2)}×`
}

/** Problems that make numbers untrustworthy. Failures invalidate the run. */
export function findProblems (
  summaries: readonly ScenarioSummary[], unexpectedExits: readonly string[]
): { failures: string[], warnings: string[] } {
  const failures: string[] = unexpectedExits.map((why) => `${why} during the run`)
  const warnings: string[] = []
  for (const s of summaries) {
    if (s.unexpectedStatus > 0 || s.errors > 0) {
      failures.push(`"${s.name}": ${s.unexpectedStatus} unexpected-status responses and ${s.errors} socket ` +
        'errors/timeouts — probably a misconfiguration (bad key, wrong upstream, server crash); its numbers are ' +
        'meaningless')
    }
    if (s.loadgenCpuPct !== undefined && s.loadgenCpuPct >= SATURATED_PCT &&
        (s.serverCpuPct === undefined || s.serverCpuPct < SATURATED_PCT)) {
      warnings.push(`"${s.name}": the load-generator core was ${fixed(s.loadgenCpuPct, 0)}% busy while the server ` +
        `used ${s.serverCpuPct === undefined ? 'an unknown share' : `${fixed(s.serverCpuPct, 0)}%`} of its core; the ` +
        'result may be capped by the client side')
    }
    if (s.otherCpuPct !== undefined && s.otherCpuPct >= NOISY_PCT) {
      warnings.push(`"${s.name}": other activity on the machine used ${fixed(s.otherCpuPct, 0)}% of a core during ` +
        'its rounds; the machine was not quiet, rerun when idle')
    }
    const spread = (s.reqPerSecMax - s.reqPerSecMin) / s.reqPerSec
    if (spread > 0.1) {
      warnings.push(`"${s.name}": req/s varied by ${fixed(100 * spread, 0)}% between rounds; consider more or longer ` +
        'rounds')
    }
  }
  return { failures, warnings }
}

export function markdown (
  info: RunInfo, summaries: readonly ScenarioSummary[], problems: { failures: string[], warnings: string[] }
): string {
  const lines: string[] = []
  if (problems.failures.length > 0) {
    lines.push('> **BENCHMARK INVALID**', '>')
    for (const f of problems.failures) lines.push(`> - ${f}`)
    lines.push('')
  }
  lines.push(
    '| scenario | req/s (mean) | req/s min–max | compared with¹⁰ | ratio (means) | ratio (paired)⁷ | server CPU ' +
    'µs/req⁹ | ratio, CPU/req (paired)⁹ | p50 ms | p99 ms | unexpected status¹ | errors² | server CPU³ | loadgen ' +
    'CPU⁴ | other CPU⁵ | peak RSS MiB⁶ | Redis per 1k req: round trips / records read⁸ |',
    '|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
  )
  for (const s of summaries) lines.push(row(s))
  const split = summaries.filter((s) => s.partsCpuUsPerReq !== undefined)
  if (split.length > 0) lines.push('', 'CPU per request by process (median over rounds):')
  for (const s of split) {
    const parts = Object.entries(s.partsCpuUsPerReq ?? {}).map(([label, us]) => `${label} ${fixed(us, 0)} µs`)
    lines.push(`- ${s.name}: ${parts.join(' + ')} = ${fixed(s.cpuUsPerReq, 0)} µs per request together`)
  }
  const missed = summaries.filter((s) => s.scriptsPerMiss !== undefined && (s.missesPer1k ?? 0) >= 100)
  if (missed.length > 0) {
    lines.push('', 'Redis round trips per cache miss (registry script calls ÷ `keygate_cache_misses_total`, measured ' +
      'rounds), for rows where at least 1 request in 10 missed:')
  }
  for (const s of missed) {
    lines.push(`- ${s.name}: **${fixed(s.scriptsPerMiss, 3)}** per miss; ${fixed(s.missesPer1k, 1)} misses per 1,000 ` +
      'responses')
  }
  const targets = summaries.flatMap((s) => s.target === undefined ? [] : [targetLine(s, s.target)])
  if (targets.length > 0) lines.push('', 'Targets:', ...targets)
  lines.push(
    '',
    '¹ non-2xx responses, or responses other than the scenario\'s expected status (warm-up included). ' +
      '² socket errors and timeouts (warm-up included). ' +
      '³ share of one core used by the server process, and by its worker processes under `--workers` (so above 100% ' +
      'there), during measured rounds; for nginx + the keygate authorizer, both together. ' +
      '⁴ load generator (autocannon, in the runner) + origin, share of one core. ' +
      '⁵ everything else on the machine (other processes, kernel, VM steal), share of one core; should be near 0. ' +
      '⁶ VmHWM of the server process at the end of the run (the primary\'s under `--workers`; keygate\'s behind ' +
      'nginx; nginx\'s master\'s for nginx alone). ' +
      '⁷ median over rounds of the ratio to the compared row measured in the same round: the headline figure, robust ' +
      'to the machine\'s speed drifting during the run. ' +
      '⁸ per 1,000 responses in the measured rounds, as Redis counts them (INFO commandstats): the registry\'s ' +
      'script calls (EVALSHA, one round trip each; the cache misses of one event-loop turn share one, and a rate ' +
      'limit, a usage flush or a request-log write of up to 500 keys is one too) / the records those scripts read ' +
      '(HMGET: a key\'s record, then its user\'s, ' +
      'role\'s and org\'s; an unknown key is one). ' +
      '⁹ the server\'s CPU time per response (median over rounds), and the median over rounds of the compared row\'s ' +
      'CPU per response divided by this row\'s: the throughput ratio of a saturated core. It does not move with the ' +
      'load generator\'s share of the machine or with VM steal, so it is the steadier of the two ratios on a noisy ' +
      'machine. ' +
      '¹⁰ the row the ratios are against, measured in the same rounds: the baseline, except for the authorizer\'s ' +
      'decision rows (the fastify hello-world, which answers the same request with an empty 200), nginx + Lua ' +
      '(keygate\'s own proxy, personal key, cache warm) and the other nginx rows (nginx + Lua).',
    '',
    `- date: ${info.date}`,
    `- machine: ${info.machine}`,
    `- os: ${info.os}`,
    `- node: ${info.node}`,
    `- pinning: ${info.pinning}`,
    `- settings: ${info.settings}`,
    `- command: \`${info.command}\``
  )
  if (problems.warnings.length > 0) {
    lines.push('', 'Warnings:')
    for (const w of problems.warnings) lines.push(`- ${w}`)
  }
  return lines.join('\n') + '\n'
}
