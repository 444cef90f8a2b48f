// Cheap per-process metrics from Linux /proc (undefined elsewhere).
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

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

/** Resident set size now (VmRSS) in KiB; the process must still be alive. */
export function rssKiB (pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
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

/** The live processes descended from `pid` (its workers, for `serve --workers`). */
function descendants (pid: number): number[] {
  const children = new Map<number, number[]>()
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return []
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const list = children.get(ppid) ?? []
      list.push(Number(entry))
      children.set(ppid, list)
    } catch {}
  }
  const out: number[] = []
  const queue = [pid]
  while (queue.length > 0) {
    for (const child of children.get(queue.shift() as number) ?? []) {
      out.push(child)
      queue.push(child)
    }
  }
  return out
}

/** CPU time (seconds) of a process and of every live process descended from it. */
export function treeCpuSeconds (pid: number): number | undefined {
  const own = cpuSeconds(pid)
  if (own === undefined) return undefined
  let total = own
  for (const child of descendants(pid)) total += cpuSeconds(child) ?? 0
  return total
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
