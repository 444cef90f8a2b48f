// Reads the CPU profiles `COUNT_CPU_PROF=<dir> node bench/dist/count.js <targets>` writes (V8's
// .cpuprofile, one per server), as µs of the profile's sampled time a request: where a server's
// time goes, and how two servers differ; and the heap profiles of COUNT_HEAP_PROF, as bytes a request.
//
//   node bench/dist/profile.js groups <requests> <a.cpuprofile> [<b.cpuprofile> ...]
//       self time by group (a package, a node internal module, keygate's directory under dist/,
//       native code, the collector), one column a profile
//   node bench/dist/profile.js owners <requests> <a.cpuprofile> [<b.cpuprofile> ...]
//       self time by owner: keygate, node:crypto, the rest of node, each package, socket writes,
//       the collector; a native frame is charged to the owner of the JavaScript that called it
//       (a regular expression to the code matching it, a digest to node:crypto), so a group is
//       the time its code causes, not only the time spent in its own JavaScript
//   node bench/dist/profile.js diff <requests> <a.cpuprofile> <b.cpuprofile> [top]
//       self time by function, b against a, the largest differences first
//   node bench/dist/profile.js tree <requests> <file.cpuprofile> <function regex> [depth] [min µs]
//       the inclusive time under the outermost frames whose function name matches, as a tree
//   node bench/dist/profile.js heap <requests> <file.heapprofile> [callers] [top]
//       a sampling heap profile (`COUNT_HEAP_PROF`, with or without COUNT_HEAP_SURVIVORS=1): bytes
//       a request by allocating function and its first callers (default 2)
//
// <requests>: the requests the server answered while profiled (count.js profiles its whole life:
// COUNT_WARMUP + COUNT_MEASURED), so start-up shows as a small `startup` group. The profiler's own
// overhead inflates every figure by a similar share: compare within one profile, or two profiles
// of one run, never with the table's CPU per request.
import { readFileSync } from 'node:fs'

interface CallFrame { functionName: string, url: string, lineNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, children?: number[] }
interface CpuProfile { nodes: ProfileNode[], samples: number[], timeDeltas: number[] }

interface Profile {
  node: (id: number) => ProfileNode
  parent: (id: number) => number | undefined
  /** each sample's leaf node and its duration in µs */
  samples: Array<{ id: number, us: number }>
}

function load (file: string): Profile {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parents = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parents.set(c, n.id)
  // a sample's duration is the delta to the next sample
  const samples = p.samples.map((id, i) => ({ id, us: p.timeDeltas[i + 1] ?? 0 }))
  return {
    node: (id) => byId.get(id) as ProfileNode,
    parent: (id) => parents.get(id),
    samples
  }
}

function frameName (cf: CallFrame): string {
  return `${cf.functionName === '' ? '(anonymous)' : cf.functionName} ${cf.url.replace(/^.*\//, '')}:${cf.lineNumber + 1}`
}

const STARTUP = /^(wrapSafe|compileSourceTextModule|internalModuleStat|lstat|readFileUtf8|resolveSync|compileFunction)$/

function groupOf (cf: CallFrame): string | undefined {
  const { functionName: fn, url } = cf
  if (fn === '(idle)') return undefined
  if (fn === '(garbage collector)') return 'the collector'
  if (fn === '(program)') return 'V8 outside JavaScript (program)'
  if (url.startsWith('node:internal/modules') || STARTUP.test(fn)) return 'startup (module loading)'
  if (url === '') return 'native'
  if (url.startsWith('node:')) {
    return 'node:' + url.replace(/^node:(internal\/)?/, '').replace(/\/.*$/, '')
  }
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg !== null) return pkg[1]
  if (url.includes('/bench/dist/')) return 'the bench\'s server script'
  if (url.includes('/dist/')) return 'keygate: ' + url.replace(/^.*\/dist\//, '').replace(/\/.*$/, '')
  return 'other: ' + url.replace(/^.*\//, '')
}

/** the native calls that write to a socket or read one: the system calls themselves */
const SOCKET_IO = /^(writev|writeBuffer|writeLatin1String|writeUtf8String|writeAsciiString|writeUcs2String|read)$/

/** A group (groupOf) as its owner: node:crypto, the rest of node, keygate, or as it is. */
function ownerOfGroup (group: string): string {
  if (group === 'node:crypto') return group
  if (group.startsWith('node:')) return 'node (http, net, streams, events, timers, ...)'
  if (group.startsWith('keygate: ')) return 'keygate'
  return group
}

/** A sample's owner: its frame's, or for a native frame its JavaScript caller's (a socket's system calls apart). */
function ownerOf (id: number, p: Profile): string | undefined {
  const cf = p.node(id).callFrame
  const group = groupOf(cf)
  if (group !== 'native') return group === undefined ? undefined : ownerOfGroup(group)
  let up = p.parent(id)
  while (up !== undefined && p.node(up).callFrame.url === '') up = p.parent(up)
  const caller = up === undefined ? undefined : p.node(up).callFrame
  if (caller === undefined) return 'native, no caller'
  const onFile = caller.url.startsWith('node:fs') || caller.url.includes('sonic-boom')
  if (SOCKET_IO.test(cf.functionName) && !onFile) return 'socket reads and writes (system calls)'
  return ownerOfGroup(groupOf(caller) ?? 'native')
}

function owners (requests: number, files: string[]): void {
  printColumns(requests, files, files.map((f) => selfBy(load(f), ownerOf)))
}

/** Each sample's time, summed by the key of its leaf node. */
function selfBy (p: Profile, key: (id: number, p: Profile) => string | undefined): Map<string, number> {
  const out = new Map<string, number>()
  for (const s of p.samples) {
    const k = key(s.id, p)
    if (k !== undefined) out.set(k, (out.get(k) ?? 0) + s.us)
  }
  return out
}

function fixed (us: number, requests: number, width = 9): string {
  return (us / requests).toFixed(3).padStart(width)
}

function groups (requests: number, files: string[]): void {
  printColumns(requests, files, files.map((f) => selfBy(load(f), (id, p) => groupOf(p.node(id).callFrame))))
}

function printColumns (requests: number, files: string[], columns: Array<Map<string, number>>): void {
  const last = columns[columns.length - 1] as Map<string, number>
  const names = [...new Set(columns.flatMap((c) => [...c.keys()]))]
    .sort((a, b) => (last.get(b) ?? 0) - (last.get(a) ?? 0))
  const width = Math.max(...names.map((n) => n.length), 5)
  const heads = files.map((f) => f.replace(/^.*\//, '').padStart(22)).join('')
  console.log(`${'µs a request, self'.padEnd(width)} ${heads}`)
  for (const n of names) {
    console.log(`${n.padEnd(width)} ${columns.map((c) => fixed(c.get(n) ?? 0, requests, 22)).join('')}`)
  }
  const totals = columns.map((c) => [...c.values()].reduce((a, b) => a + b, 0))
  console.log(`${'busy'.padEnd(width)} ${totals.map((t) => fixed(t, requests, 22)).join('')}`)
}

function diff (requests: number, a: string, b: string, top: number): void {
  const byFunction = (id: number, p: Profile): string | undefined => {
    const cf = p.node(id).callFrame
    return cf.functionName === '(idle)' ? undefined : frameName(cf)
  }
  const x = selfBy(load(a), byFunction)
  const y = selfBy(load(b), byFunction)
  const rows = [...new Set([...x.keys(), ...y.keys()])].map((k) => ({ k, a: x.get(k) ?? 0, b: y.get(k) ?? 0 }))
  rows.sort((r, s) => Math.abs(s.b - s.a) - Math.abs(r.b - r.a))
  console.log(`${'b - a'.padStart(9)}${'a'.padStart(9)}${'b'.padStart(9)}  function (µs a request, self)`)
  for (const r of rows.slice(0, top)) {
    console.log(`${fixed(r.b - r.a, requests)}${fixed(r.a, requests)}${fixed(r.b, requests)}  ${r.k}`)
  }
}

interface TreeNode { us: number, children: Map<string, TreeNode> }

function tree (requests: number, file: string, pattern: RegExp, depth: number, minUs: number): void {
  const p = load(file)
  const root: TreeNode = { us: 0, children: new Map() }
  for (const s of p.samples) {
    const chain: number[] = []
    for (let id: number | undefined = s.id; id !== undefined; id = p.parent(id)) chain.push(id)
    chain.reverse()
    const at = chain.findIndex((id) => pattern.test(p.node(id).callFrame.functionName))
    if (at === -1) continue
    root.us += s.us
    let node = root
    for (const id of chain.slice(at + 1, at + 1 + depth)) {
      const name = frameName(p.node(id).callFrame)
      let child = node.children.get(name)
      if (child === undefined) node.children.set(name, child = { us: 0, children: new Map() })
      child.us += s.us
      node = child
    }
  }
  console.log(`${fixed(root.us, requests)}  ${String(pattern)} (µs a request, inclusive)`)
  const show = (node: TreeNode, indent: number): void => {
    for (const [name, child] of [...node.children].sort((a, b) => b[1].us - a[1].us)) {
      if (child.us / requests < minUs) continue
      console.log(`${fixed(child.us, requests)}  ${' '.repeat(indent)}${name}`)
      show(child, indent + 2)
    }
  }
  show(root, 2)
}

interface HeapNode { callFrame: CallFrame, selfSize: number, children: HeapNode[] }

function heap (requests: number, file: string, callers: number, top: number): void {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }
  const bytes = new Map<string, number>()
  let total = 0
  const walk = (node: HeapNode, stack: string[]): void => {
    const here = [frameName(node.callFrame), ...stack]
    if (node.selfSize > 0) {
      const key = here.slice(0, callers + 1).join(' < ')
      bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize)
      total += node.selfSize
    }
    for (const child of node.children) walk(child, here)
  }
  walk(head, [])
  console.log(`${fixed(total, requests)}  bytes a request in all`)
  for (const [key, b] of [...bytes].sort((x, y) => y[1] - x[1]).slice(0, top)) {
    console.log(`${fixed(b, requests)}  ${key}`)
  }
}

const [command, requestsArg, ...rest] = process.argv.slice(2)
const requests = Number(requestsArg)
// (without a request count, no command runs: the usage below)
const args = Number.isFinite(requests) && requests > 0 ? rest : []
if (command === 'groups' && args.length > 0) {
  groups(requests, args)
} else if (command === 'owners' && args.length > 0) {
  owners(requests, args)
} else if (command === 'diff' && args.length >= 2) {
  diff(requests, args[0] as string, args[1] as string, Number(args[2] ?? '40'))
} else if (command === 'tree' && args.length >= 2) {
  tree(requests, args[0] as string, new RegExp(args[1] as string), Number(args[2] ?? '6'), Number(args[3] ?? '0.05'))
} else if (command === 'heap' && args.length >= 1) {
  heap(requests, args[0] as string, Number(args[1] ?? '2'), Number(args[2] ?? '25'))
} else {
  console.error('usage: node bench/dist/profile.js groups|owners|diff|tree|heap <requests> <files...> ' +
    '(see bench/profile.ts)')
  process.exit(2)
}
