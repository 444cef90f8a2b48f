// Cheap per-process metrics from Linux /proc (undefined elsewhere).
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** Peak resident set size (VmHWM) in KiB; the process must still be alive. */
export function peakRssKiB (pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status)
    return match?.[1] === undefined ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

let ticksPerSecond: number | undefined
function clockTicks (): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
    } catch {
      ticksPerSecond = 100
    }
  }
  return ticksPerSecond
}

/** CPU time (user + system) consumed so far by a process, in seconds. */
export function cpuSeconds (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after "(comm)": state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    if (Number.isNaN(utime) || Number.isNaN(stime)) return undefined
    return (utime + stime) / clockTicks()
  } catch {
    return undefined
  }
}

/** CPU time (all cores, seconds) the whole machine spent busy, including steal. */
export function machineBusySeconds (): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
    // cpu user nice system idle iowait irq softirq steal ...
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number)
    const busy = [user, nice, system, irq, softirq, steal].reduce<number>((sum, v) => sum + (v ?? 0), 0)
    return Number.isNaN(busy) ? undefined : busy / clockTicks()
  } catch {
    return undefined
  }
}
