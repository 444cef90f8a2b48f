// CPU pinning plan: the server under test gets one core to itself; the load
// generator (this process) and the origin stub share another. Uses taskset.
import { execFileSync } from 'node:child_process'

export interface Pinning {
  applied: boolean
  /** `taskset -c` list for servers under test, when applied. */
  serverCpus: string | undefined
  /** `taskset -c` list for the runner, origin and other helpers, when applied. */
  auxCpus: string | undefined
  /** Human-readable explanation, printed with the results. */
  note: string
}

const notApplied = (why: string): Pinning =>
  ({ applied: false, serverCpus: undefined, auxCpus: undefined, note: `not applied (${why})` })

/** Expand a Linux CPU list such as "0-3,6" into [0, 1, 2, 3, 6]. */
export function parseCpuList (list: string): number[] {
  const cpus: number[] = []
  for (const part of list.trim().split(',')) {
    const [from, to] = part.split('-').map(Number)
    if (from === undefined || Number.isNaN(from)) continue
    const last = to === undefined || Number.isNaN(to) ? from : to
    for (let cpu = from; cpu <= last; cpu++) cpus.push(cpu)
  }
  return cpus
}

function taskset (args: string[]): string {
  return execFileSync('taskset', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

/** Decide the plan and pin the current process (all its threads) to the aux CPU. */
export function applyPinning (enabled: boolean): Pinning {
  if (!enabled) return notApplied('disabled with BENCH_PIN=0')
  let affinity: string
  try {
    affinity = taskset(['-cp', String(process.pid)])
  } catch (err: unknown) {
    return notApplied(`taskset unavailable: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`)
  }
  const cpus = parseCpuList(affinity.slice(affinity.lastIndexOf(':') + 1))
  const [aux, server] = cpus
  if (aux === undefined || server === undefined) return notApplied(`only ${cpus.length} CPU allowed`)
  try {
    taskset(['-a', '-cp', String(aux), String(process.pid)])
  } catch (err: unknown) {
    return notApplied(`could not pin the runner: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`)
  }
  return {
    applied: true,
    serverCpus: String(server),
    auxCpus: String(aux),
    note: `applied: server under test on CPU ${server}; load generator + origin on CPU ${aux}`
  }
}
