/**
 * The real `keygate` executable (dist/, built by `npm test` before tap runs), run
 * with exactly the environment given (plus PATH, and NODE_COMPILE_CACHE: Node keeps
 * the compiled CLI on disk between runs, which saves about a tenth of each run's
 * start-up and changes nothing else), against a gateway's Redis namespace when
 * `cliEnv` is used.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestGateway } from './gateway.js'

export const BIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url))
const COMPILE_CACHE = join(tmpdir(), 'keygate-test-compile-cache')

export interface CliRun { code: number | null, stdout: string, stderr: string }

export function runCli (args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: COMPILE_CACHE, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(input ?? '')
  })
}

/**
 * A config file and environment that point the CLI at the gateway's Redis and namespace,
 * with its rules. Redis timeouts are generous (5 s, not 0.5 s and 1 s): on a busy machine
 * a CLI process can take longer than the defaults to connect and get its answer, and no
 * test that runs the CLI through this environment is about Redis timing out.
 */
export function cliEnv (gw: TestGateway): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-cli-'))
  const file = join(dir, 'keygate.yaml')
  const c = gw.config
  writeFileSync(file, JSON.stringify({
    redis: { prefix: c.redis.prefix, command_timeout_ms: 5000, connect_timeout_ms: 5000 },
    keys: c.keys,
    identity: c.identity,
    upstreams: c.upstreams,
    routes: c.routes,
    rules: c.rules,
    shadow_rules: c.shadow_rules
  }))
  return { KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: gw.redis.url }
}

/**
 * Runs `tasks` (each typically a CLI run: a process of its own, mostly start-up) at
 * most `jobs` at a time; the results in the order of the tasks.
 */
export async function pooled<T> (tasks: Array<() => Promise<T>>, jobs = 2): Promise<T[]> {
  const results: T[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await (tasks[i] as () => Promise<T>)()
    }
  }
  await Promise.all(Array.from({ length: jobs }, worker))
  return results
}
