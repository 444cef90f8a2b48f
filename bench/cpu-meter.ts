// CPU utilisation over a time window: the server under test on its own, and
// the load-generator side (this runner plus helper processes such as the origin).
import { cpuSeconds, machineBusySeconds, treeCpuSeconds } from './procfs.js'
import type { ServerPart } from './types.js'

export interface CpuUsage {
  /** % of one core used by the server under test (with its worker processes); undefined if unknown. */
  serverPct: number | undefined
  /** % of one core used by the runner (autocannon) plus helper processes. */
  loadgenPct: number | undefined
  /** % of one core used by everything else on the machine (other processes, kernel, steal). */
  otherPct: number | undefined
  /** each part's % of one core, when the server is made of parts (nginx + keygate) */
  partsPct?: Record<string, number>
}

const selfSeconds = (): number => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1e6
}

function sumSeconds (pids: readonly number[]): number | undefined {
  let total = 0
  for (const pid of pids) {
    const seconds = cpuSeconds(pid)
    if (seconds === undefined) return undefined
    total += seconds
  }
  return total
}

function partsSeconds (parts: readonly ServerPart[]): Record<string, number> | undefined {
  const out: Record<string, number> = {}
  for (const part of parts) {
    const seconds = treeCpuSeconds(part.pid)
    if (seconds === undefined) return undefined
    out[part.label] = (out[part.label] ?? 0) + seconds
  }
  return out
}

/**
 * Start measuring now; call the returned function at the end of the window. The server
 * is one process (with its descendants) or several parts, whose CPU is summed.
 */
export function startCpuMeter (
  server: number | readonly ServerPart[] | undefined, helperPids: readonly number[]
): () => CpuUsage {
  const parts = typeof server === 'object' ? server : undefined
  const serverSeconds = (): number | undefined => typeof server === 'number' ? treeCpuSeconds(server) : undefined
  const t0 = process.hrtime.bigint()
  const server0 = serverSeconds()
  const parts0 = parts === undefined ? undefined : partsSeconds(parts)
  const helpers0 = sumSeconds(helperPids)
  const self0 = selfSeconds()
  const machine0 = machineBusySeconds()
  return () => {
    const wall = Number(process.hrtime.bigint() - t0) / 1e9
    const server1 = serverSeconds()
    const parts1 = parts === undefined ? undefined : partsSeconds(parts)
    const helpers1 = sumSeconds(helperPids)
    const self = selfSeconds() - self0
    const machine1 = machineBusySeconds()
    const pct = (seconds: number): number => (100 * seconds) / wall
    let partsPct: Record<string, number> | undefined
    if (parts0 !== undefined && parts1 !== undefined) {
      partsPct = {}
      for (const [label, seconds] of Object.entries(parts1)) partsPct[label] = pct(seconds - (parts0[label] ?? 0))
    }
    const serverPct = partsPct !== undefined
      ? Object.values(partsPct).reduce((sum, v) => sum + v, 0)
      : server0 === undefined || server1 === undefined ? undefined : pct(server1 - server0)
    const loadgenPct = helpers0 === undefined || helpers1 === undefined ? undefined : pct(self + helpers1 - helpers0)
    const otherPct = machine0 === undefined || machine1 === undefined ||
      serverPct === undefined || loadgenPct === undefined
      ? undefined
      : Math.max(0, pct(machine1 - machine0) - serverPct - loadgenPct)
    return { serverPct, loadgenPct, otherPct, ...(partsPct === undefined ? {} : { partsPct }) }
  }
}
