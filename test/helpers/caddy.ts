/**
 * A real Caddy (Debian's package; `.ci/run` installs it) for tests, on a free
 * 127.0.0.1 port, with its own Caddyfile in a temporary directory: the admin endpoint
 * off, no automatic HTTPS, its storage in that directory. The site block is the
 * caller's: docs/authorizer.md's configuration, with its addresses replaced by the
 * test's.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { codeBlock } from './nginx.js'

export interface Caddy {
  port: number
  /** Caddy's output so far (for failure messages) */
  output: () => string
}

const CANDIDATES = ['/usr/bin/caddy', '/usr/local/bin/caddy']
const AUTHORIZER_DOC = fileURLToPath(new URL('../../docs/authorizer.md', import.meta.url))

export function caddyBinary (): string {
  const found = CANDIDATES.find((p) => existsSync(p))
  if (found !== undefined) return found
  throw new Error('caddy not found: install Debian\'s caddy package (`apt-get install -y caddy`; .ci/run does)')
}

/** docs/authorizer.md's Caddyfile, pointed at a test's keygate authorizer, upstream and port. */
export function caddyConfigFromDocs (authzPort: number, upstreamPort: number, port: number): string {
  let conf = codeBlock(AUTHORIZER_DOC, 'caddy')
  for (const [from, to] of [
    ['forward_auth 127.0.0.1:8082', `forward_auth 127.0.0.1:${authzPort}`],
    ['reverse_proxy 127.0.0.1:3000', `reverse_proxy 127.0.0.1:${upstreamPort}`],
    [':8000 {', `:${port} {`]
  ] as const) {
    if (!conf.includes(from)) throw new Error(`docs/authorizer.md's caddy block no longer has "${from}"`)
    conf = conf.replace(from, to)
  }
  return conf
}

/** Starts Caddy with `site` after its own global options; `port` is where `site` listens. */
export async function startCaddy (t: Test, site: string, port: number): Promise<Caddy> {
  const bin = caddyBinary()
  const dir = mkdtempSync(join(tmpdir(), 'keygate-caddy-'))
  const file = join(dir, 'Caddyfile')
  writeFileSync(file, `{
  admin off
  auto_https off
  storage file_system ${join(dir, 'data')}
}

${site}
`)
  const env = { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') }
  const check = spawnSync(bin, ['validate', '--config', file, '--adapter', 'caddyfile'], { encoding: 'utf8', env })
  if (check.status !== 0) throw new Error(`caddy validate refused the configuration:\n${check.stderr}\n${site}`)

  const child = spawn(bin, ['run', '--config', file, '--adapter', 'caddyfile'], { stdio: ['ignore', 'pipe', 'pipe'], env })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await Promise.race([exited, sleep(3000)])
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    rmSync(dir, { recursive: true, force: true })
  })
  process.once('exit', () => { if (child.exitCode === null) child.kill('SIGKILL') })

  const deadline = Date.now() + 10_000
  while (!(await listening(port))) {
    if (child.exitCode !== null) throw new Error(`caddy exited (${String(child.exitCode)}): ${output}`)
    if (Date.now() > deadline) throw new Error(`caddy did not listen on ${port}: ${output}`)
    await sleep(25)
  }
  return { port, output: () => output }
}

async function listening (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}
