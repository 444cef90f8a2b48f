// The `memory` extra alone (bench/extras.ts): the baseline's peak RSS under load, then a
// gateway's with 100,000 personal keys cached, without the throughput table. Unpinned.
//
//   node bench/dist/memory.js
// Env: BENCH_KEYGATE_NODE_OPTIONS (bench/keygate.ts): the gateway's node options, the
// baseline's untouched (e.g. `--max-semi-space-size=16`); MEMORY_NODE_ARGS: the gateway's
// own node flags, space-separated, for those NODE_OPTIONS refuses (e.g. `--trace-gc`);
// MEMORY_STDOUT=<file>: the gateway's stdout (its log, --trace-gc's lines) into that file.
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { memory } from './extras.js'
import { nodeArgsFrom, stdoutInto, stopAll } from './process.js'
import { startOriginContext } from './servers.js'

const distDir = dirname(fileURLToPath(import.meta.url))
const { origin, ctx } = await startOriginContext(distDir)
try {
  const result = await memory(ctx, {
    prefix: stdoutInto(process.env['MEMORY_STDOUT'] ?? '/dev/null'),
    nodeArgs: nodeArgsFrom('MEMORY_NODE_ARGS'),
    readyTimeoutMs: 120_000
  })
  process.stdout.write(result.markdown)
  for (const f of result.failures) process.stdout.write(`- ${f}\n`)
} finally {
  await origin.stop()
  await stopAll()
}
