/**
 * A registry read leaves next to nothing in V8's old generation: what a cache miss allocates (the
 * command, its arguments, the reply's strings, the chain's records) dies young, so cold keys
 * do not fill the old generation and bring on mark-compacts (docs/benchmarks.md, cold keys).
 *
 * V8 allocates a function literal assigned straight to a property (`this.reject = (err) =>
 * ...`) in the old generation. ioredis 5.11.1 does that for every command (Command's
 * initPromise) and again for every script call (Script's toWritable); the closure's context
 * holds the command, and a dead closure in the old generation keeps what it refers to alive
 * through every scavenge until the next mark-compact: each read's whole graph was promoted
 * (about 120 bytes a read here). patches/ioredis+5.11.1.patch binds those closures to a
 * name first, which V8 allocates young. The same holds for the command queue's items
 * (`{ command, stream, select }`), which live across a round trip: V8's allocation-site
 * pretenuring may decide to allocate them in the old generation (it did in 14 of 17 runs
 * of this probe), and a dead item there kept its command and reply: the patch has the item
 * let go of its command before the reply is delivered.
 *
 * A separate node process (the built gateway's RegistryReader and Redis client, as `serve`
 * uses them) reads 5,000 keys in batches from a real redis-server under `--trace-gc-nvp`;
 * the bytes its scavenges promote while it reads are summed off V8's own trace.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { startRedis } from '../../helpers/redis.js'

t.setTimeout(120_000)

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const dist = (path: string): string => pathToFileURL(join(ROOT, 'dist', path)).href
const ioredis = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('ioredis')).href

/** Reads every key in batches (50 readers at once, as a loaded gateway's misses), after a warm-up. */
const PROBE = `
import { Redis } from '${ioredis}'
import { createRedis } from '${dist('registry/redis-client.js')}'
import { RegistryReader } from '${dist('registry/registry-reader.js')}'
import { redisKeys } from '${dist('registry/redis-keys.js')}'
import { generateKey } from '${dist('registry/key-format.js')}'
const [url, prefix] = process.argv.slice(2)
const keys = redisKeys(prefix)
const ids = []
const seed = new Redis(url)
const batch = seed.pipeline()
batch.hset(keys.role('reader'), { permissions: 'users:read' })
for (let u = 0; u < 100; u++) batch.hset(keys.user('user' + u), { org: 'acme', role: 'reader', status: 'active' })
for (let i = 0; i < 5000; i++) {
  const k = generateKey('kg_')
  ids.push(k.id)
  batch.hset(keys.key(k.id), { hash: k.hash, org: 'acme', name: 'probe', status: 'active', type: 'personal', user: 'user' + (i % 100) })
}
await batch.exec()
seed.disconnect()
const redis = createRedis({ url, prefix, command_timeout_ms: 1000, connect_timeout_ms: 1000 })
await new Promise((resolve) => redis.once('ready', resolve))
const reader = new RegistryReader(redis, keys, prefix)
let next = 0
let found = 0
async function readUntil (total) {
  while (next < total) {
    const chain = await reader.fetchChain(ids[next++ % ids.length])
    if (chain.key !== null) found++
  }
}
const readers = async (total) => { await Promise.all(Array.from({ length: 50 }, () => readUntil(total))) }
await readers(50000)
console.log('MEASURING')
const from = next
found = 0
await readers(150000)
console.log('READS ' + (next - from) + ' FOUND ' + found)
redis.disconnect()
`

t.test('a batch of registry reads does not promote its commands and replies to the old generation', async (t) => {
  const redis = await startRedis()
  t.teardown(async () => { await redis.stop() })
  const dir = mkdtempSync(join(tmpdir(), 'keygate-read-promotion-'))
  const probe = join(dir, 'probe.mjs')
  writeFileSync(probe, PROBE)

  // a small young generation: many scavenges in the measured reads
  const child = spawn(process.execPath, ['--max-semi-space-size=1', '--trace-gc-nvp', probe, redis.url, `kgpromo:${process.pid}:`],
    { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { err += d.toString() })
  const code = await new Promise<number | null>((resolve) => { child.on('close', resolve) })
  t.equal(code, 0, `the probe ran (${err.trim().split('\n').slice(-3).join(' | ')})`)

  const measured = out.slice(out.indexOf('MEASURING'))
  const done = /READS (\d+) FOUND (\d+)/.exec(measured)
  const reads = Number(done?.[1])
  t.equal(reads, 100_000, 'it read 100,000 keys while measured')
  t.equal(Number(done?.[2]), reads, 'every read found its key, user and role')
  let scavenges = 0
  let promoted = 0
  for (const line of measured.split('\n')) {
    if (!line.includes(' gc=s ')) continue
    scavenges++
    promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? Number.NaN)
  }
  t.ok(scavenges >= 10, `V8 scavenged while the reads ran (${scavenges} times)`)
  // Unpatched ioredis: 743 bytes a read here, the read's whole graph; with the closures' change alone, 100-130 bytes
  // in the runs where V8 pretenures the queue's items. Patched: 0.6.
  t.ok(promoted / reads < 10, `scavenges promoted ${(promoted / reads).toFixed(1)} bytes a read (${promoted} in all)`)
})
