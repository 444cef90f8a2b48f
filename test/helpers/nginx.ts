/**
 * A real nginx (Debian's package, which has `auth_request`; `.ci/run` installs it) for
 * tests, on a free 127.0.0.1 port, in a temporary directory, in the foreground as one
 * process. The `http` block's contents are the caller's: docs/authorizer.md's
 * configuration, with its addresses replaced by the test's.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'

export interface Nginx {
  port: number
  /** nginx's error log so far (for failure messages) */
  errors: () => string
}

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx']

export function nginxBinary (): string {
  const found = CANDIDATES.find((p) => existsSync(p))
  if (found !== undefined) return found
  throw new Error('nginx not found: install Debian\'s nginx package (`apt-get install -y nginx`; .ci/run does)')
}

/** A fenced code block of a Markdown file, by its language tag (the first one). */
export function codeBlock (markdownFile: string, language: string): string {
  const text = readFileSync(markdownFile, 'utf8')
  const match = new RegExp('```' + language + '\\n([\\s\\S]*?)\\n```').exec(text)
  if (match === null) throw new Error(`${markdownFile}: no \`\`\`${language} block`)
  return match[1] as string
}

const AUTHORIZER_DOC = fileURLToPath(new URL('../../docs/authorizer.md', import.meta.url))

/** docs/authorizer.md's nginx configuration, pointed at a test's keygate authorizer, upstream and port. */
export function nginxConfigFromDocs (authzPort: number, upstreamPort: number, port: number): string {
  let conf = codeBlock(AUTHORIZER_DOC, 'nginx')
  for (const [from, to] of [
    ['server 127.0.0.1:8082;', `server 127.0.0.1:${authzPort};`],
    ['server 127.0.0.1:3000;', `server 127.0.0.1:${upstreamPort};`],
    ['listen 127.0.0.1:8000;', `listen 127.0.0.1:${port};`]
  ] as const) {
    if (!conf.includes(from)) throw new Error(`docs/authorizer.md's nginx block no longer has "${from}"`)
    conf = conf.replace(from, to)
  }
  return conf
}

/** Starts nginx with `http` as its http block's contents; `port` is where `http` listens. */
export async function startNginx (t: Test, http: string, port: number): Promise<Nginx> {
  const bin = nginxBinary()
  const dir = mkdtempSync(join(tmpdir(), 'keygate-nginx-'))
  const conf = `
worker_processes 1;
daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${http}
}
`
  writeFileSync(join(dir, 'nginx.conf'), conf)
  const check = spawnSync(bin, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' })
  if (check.status !== 0) throw new Error(`nginx -t refused the configuration:\n${check.stderr}\n${conf}`)

  const child = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const errors = (): string => stderr + (existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '')
  t.teardown(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGQUIT')
      await Promise.race([exited, sleep(2000)])
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    rmSync(dir, { recursive: true, force: true })
  })
  process.once('exit', () => { if (child.exitCode === null) child.kill('SIGKILL') })

  const deadline = Date.now() + 5000
  while (!(await listening(port))) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${String(child.exitCode)}): ${errors()}`)
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${port}: ${errors()}`)
    await sleep(25)
  }
  return { port, errors }
}

async function listening (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  })
}
