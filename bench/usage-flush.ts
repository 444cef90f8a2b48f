// The `usageFlush` extra (opt-in: BENCH_EXTRAS=usageFlush), also run on its own:
//
//   node bench/dist/usage-flush.js        (USAGE_KEYS, default 100000; USAGE_ORGS, default 1000)
//
// What per-key usage counting (docs/usage.md) asks of Redis with many active keys:
// keygate's own UsageCounter (its build), with the gateway's defaults (usage.flush_ms
// 5 s, usage.max_keys 100,000), on a redis-server of its own. In each of two intervals,
// USAGE_KEYS distinct key ids of USAGE_ORGS orgs are counted once each (one request a
// key; all between two of the timer's ticks, so one interval holds them), and the
// counter's own timer writes them. Around each interval: INFO commandstats (the commands
// the write sent, and those its script ran inside Redis), the client's socket writes,
// the write's duration (the counter's meter) and its time inside Redis. The first
// interval's write is the process's first (ioredis sends the script itself once, EVAL,
// then its hash); the second is the steady state. Target: one flush per interval, in
// script calls of 500 keys, two a pipelined write (each sent when the one before was
// answered), not a command per key or per request.
import { Redis } from 'ioredis'
import { generateKey } from '@keygate/gateway/dist/registry/key-format.js'
import { redisKeys } from '@keygate/gateway/dist/registry/redis-keys.js'
import { UsageCounter } from '@keygate/gateway/dist/usage/counter.js'
import type { ExtraResult } from './extras.js'
import { PREFIX, startBenchRedis } from './keygate.js'
import type { ScenarioContext } from './types.js'

const FLUSH_MS = 5000
/** what the usage script runs inside Redis (commandstats counts them too) */
const INSIDE_SCRIPT = new Set(['hincrby', 'expireat'])

interface Interval {
  /** commandstats calls, by command, during the interval (INFO excluded) */
  commands: Map<string, number>
  /** microseconds Redis spent in the commands sent (the script's commands are inside them) */
  usec: number
  /** writes of the client's socket to Redis */
  socketWrites: number
  /** the counter's writes, their duration (ms) and keys */
  writes: Array<{ ms: number, keys: number, ok: boolean }>
}

async function commandStats (client: Redis): Promise<Map<string, { calls: number, usec: number }>> {
  const out = new Map<string, { calls: number, usec: number }>()
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1] as string, { calls: Number(m[2]), usec: Number(m[3]) })
  }
  return out
}

export async function usageFlush (ctx: ScenarioContext): Promise<ExtraResult> {
  const keyCount = Number(process.env['USAGE_KEYS'] ?? '100000')
  const orgCount = Number(process.env['USAGE_ORGS'] ?? '1000')
  const redis = await startBenchRedis(ctx, 'redis-usage')
  // the counter's connection (as the gateway's own usage connection), and one to read INFO
  const client = new Redis(redis.url, { maxRetriesPerRequest: 0 })
  const stats = new Redis(redis.url)
  const writes: Interval['writes'] = []
  const failures: string[] = []
  // one counter, as in a gateway process: its timer writes every FLUSH_MS
  const counter = new UsageCounter(client, redisKeys(PREFIX), {
    flushMs: FLUSH_MS,
    retentionMs: 90 * 86_400_000,
    onError: (err) => { failures.push(`usage flush: a write failed: ${(err as Error).message}`) },
    meter: {
      flushed: (ms, keys, ok) => { writes.push({ ms, keys, ok }) },
      dropped: (requests, reason) => { failures.push(`usage flush: ${requests} requests dropped (${reason})`) },
      full: () => {}
    }
  })
  try {
    await client.ping()
    let socketWrites = 0
    const stream = (client as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream
    const write = stream.write.bind(stream)
    stream.write = (...args: unknown[]) => { socketWrites++; return write(...args) }

    const ids = Array.from({ length: keyCount }, () => generateKey('kg_').id)
    const orgs = Array.from({ length: orgCount }, (_, i) => `org${i}`)
    const intervals: Interval[] = []
    for (let round = 0; round < 2; round++) {
      const before = await commandStats(stats)
      const socketBefore = socketWrites
      const writesBefore = writes.length
      // (no turn of the event loop meanwhile, one minute: the timer's next tick writes them all in one batch)
      const now = Date.now()
      for (let i = 0; i < keyCount; i++) counter.count(ids[i] as string, orgs[i % orgCount], 200, 'allowed', now)
      // the timer's write
      const deadline = Date.now() + FLUSH_MS + 60_000
      while (writes.length === writesBefore && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      // (the next tick comes FLUSH_MS later, with nothing to write)
      const after = await commandStats(stats)
      const commands = new Map<string, number>()
      let usec = 0
      for (const [name, a] of after) {
        if (name === 'info') continue
        const b = before.get(name) ?? { calls: 0, usec: 0 }
        if (a.calls > b.calls) commands.set(name, a.calls - b.calls)
        // (a script's own time includes the commands it runs, which are counted apart too)
        if (!INSIDE_SCRIPT.has(name)) usec += a.usec - b.usec
      }
      intervals.push({ commands, usec, socketWrites: socketWrites - socketBefore, writes: writes.slice(writesBefore) })
    }

    const perCall = 500
    const expectedCalls = Math.ceil(keyCount / perCall) + Math.ceil(orgCount / perCall)
    const rows = intervals.map((iv, i) => {
      const sent = [...iv.commands].filter(([name]) => !INSIDE_SCRIPT.has(name))
      const calls = (iv.commands.get('evalsha') ?? 0) + (iv.commands.get('eval') ?? 0)
      const w = iv.writes
      if (w.length !== 1) failures.push(`usage flush: interval ${i + 1} took ${w.length} writes, not one`)
      if (calls !== expectedCalls) {
        failures.push(`usage flush: interval ${i + 1}: ${calls} script calls, not ${expectedCalls}`)
      }
      return `| ${i === 0 ? 'first (script loaded)' : 'second (steady state)'} | ` +
        `${w.map((x) => x.keys.toLocaleString('en')).join(' + ')} | ` +
        `${sent.map(([n, c]) => `${c.toLocaleString('en')} ${n.toUpperCase()}`).join(', ')} | ` +
        `${(iv.commands.get('hincrby') ?? 0).toLocaleString('en')} HINCRBY, ` +
        `${(iv.commands.get('expireat') ?? 0).toLocaleString('en')} EXPIREAT | ${iv.socketWrites} | ` +
        `${w.map((x) => x.ms.toFixed(0)).join(' + ')} | ${(iv.usec / 1000).toFixed(0)} | ` +
        `${(calls / (FLUSH_MS / 1000)).toFixed(1)} |`
    })
    return {
      markdown: [
        `### Usage counting: ${keyCount.toLocaleString('en')} active keys in ${orgCount.toLocaleString('en')} orgs, ` +
        `one interval (${FLUSH_MS / 1000} s)`,
        '',
        '| interval | keys written (per write) | commands the write sent | run inside Redis by the script | client ' +
        'socket writes | write duration (ms) | time inside Redis (ms) | commands per second from counting |',
        '|---|---:|---|---|---:|---:|---:|---:|',
        ...rows,
        '',
        `keygate's UsageCounter (usage.flush_ms ${FLUSH_MS} ms, usage.max_keys 100,000) on a redis-server of its ` +
        'own, INFO commandstats around each interval. ' +
        'Each key counted once (one request) within one interval; the counter\'s own timer writes them: ' +
        `${expectedCalls} script calls of up to ${perCall} keys (and the orgs' sums), two a pipelined write. ` +
        'A socket write is one batch of commands on the wire; each awaits its replies (one round trip) before the ' +
        'next is sent, so a flush never holds more than 1,000 keys as commands. ' +
        'The first write of a process sends the script itself once (EVAL), later ones only its hash. ' +
        'The commands per second are the script calls over the interval, whatever the request rate.',
        ''
      ].join('\n'),
      failures
    }
  } finally {
    await counter.stop().catch(() => {})
    client.disconnect()
    stats.disconnect()
    await redis.server.stop()
  }
}

// run on its own: `node bench/dist/usage-flush.js`
if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const { stopAll } = await import('./process.js')
  try {
    const result = await usageFlush({
      originUrl: '', serverCpus: undefined, auxCpus: undefined, distDir: new URL('.', import.meta.url).pathname
    })
    process.stdout.write(result.markdown)
    for (const f of result.failures) process.stdout.write(`!!! ${f}\n`)
    process.exitCode = result.failures.length === 0 ? 0 : 1
  } finally {
    await stopAll()
  }
}
