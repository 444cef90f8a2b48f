/**
 * The README's quick start and docs/tutorial.md, run as a newcomer runs them, in a fresh
 * directory: the fenced `sh` blocks marked `<!-- walkthrough: NAME -->` are extracted and run.
 * - `quick-start`: `npm ci`, then one command (`npm run demo`), run in a copy of the
 *   repository's files (what a clone holds). `npm ci` itself is stood in for by a link to
 *   this checkout's node_modules (CI's own run made it with `npm ci` on a fresh clone); the
 *   demo then builds and starts in the copy.
 * - `test-command`: `npm test`, which .ci/run runs.
 * - `tutorial`: every block in order, as one bash script in the copy, against a Redis of its
 *   own, with the tutorial's ports (3000, 8080, 8081) replaced by free ones.
 */
import t from 'tap'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { freePort } from '../../helpers/net.js'
import { startPrivateRedis } from '../../helpers/redis.js'

t.setTimeout(600_000)
const root = fileURLToPath(new URL('../../../', import.meta.url))

/** The marked blocks of a Markdown file: name -> the blocks' texts, in order. */
function walkthroughBlocks (file: string): Map<string, string[]> {
  const text = readFileSync(join(root, file), 'utf8')
  const blocks = new Map<string, string[]>()
  for (const m of text.matchAll(/<!-- walkthrough: ([\w-]+) -->\n```sh\n([\s\S]*?)```/g)) {
    blocks.set(m[1] as string, [...(blocks.get(m[1] as string) ?? []), m[2] as string])
  }
  return blocks
}

/** A block's commands, without comments and blank lines. */
const commands = (block: string | undefined): string[] =>
  (block ?? '').split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l !== '' && !l.startsWith('#'))

/** A copy of the repository's files (tracked and new, not ignored), node_modules linked. */
async function freshCopy (): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-walkthrough-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const { stdout } = await promisify(execFile)('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 })
  for (const file of stdout.split('\0').filter((f) => f !== '')) {
    mkdirSync(join(dir, dirname(file)), { recursive: true })
    try { cpSync(join(root, file), join(dir, file)) } catch { /* a file deleted but not yet staged */ }
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

/** Stops a process group started detached (a script and what it left in the background). */
function stopGroup (child: ChildProcess): void {
  try { process.kill(-(child.pid as number), 'SIGTERM') } catch { /* already gone */ }
}

const readme = walkthroughBlocks('README.md')
const tutorial = walkthroughBlocks('docs/tutorial.md')
const dir = await freshCopy()

t.test('the README is for a newcomer: at most 250 lines, a table of contents first', async (t) => {
  const text = readFileSync(join(root, 'README.md'), 'utf8')
  const lines = text.split('\n').length
  t.ok(lines <= 250, `${lines} lines`)
  const headings = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1])
  t.equal(headings[0], 'Contents')
  const contents = text.slice(text.indexOf('## Contents'), text.indexOf('\n## ', text.indexOf('## Contents') + 1))
  for (const h of headings.slice(1)) t.match(contents, `(#${(h as string).toLowerCase().replace(/[^\w\- ]/g, '').replaceAll(' ', '-')})`, `Contents links ${h}`)
})

t.test('the README\'s test command is npm test, and .ci/run runs it', async (t) => {
  t.same(commands(readme.get('test-command')?.[0]), ['npm test'])
  t.match(readFileSync(join(root, '.ci/run'), 'utf8'), /^npm test 2>&1/m, '.ci/run runs the README\'s test command')
})

t.test('the README\'s quick start: npm ci, then npm run demo, in a fresh directory', async (t) => {
  const quick = commands(readme.get('quick-start')?.[0])
  t.same(quick, ['npm ci', 'npm run demo'], 'npm ci, then one command')
  const [port, adminPort] = [await freePort(), await freePort()]
  const env: NodeJS.ProcessEnv = { ...process.env, KEYGATE_LISTEN: `127.0.0.1:${port}`, KEYGATE_ADMIN_LISTEN: `127.0.0.1:${adminPort}` }
  delete env.KEYGATE_REDIS_URL
  delete env.KEYGATE_CONFIG
  const [command, ...args] = (quick[1] as string).split(' ')
  const demo = spawn(command as string, args, { cwd: dir, env, detached: true })
  t.teardown(() => { stopGroup(demo) })
  let out = ''
  demo.stdout.on('data', (d: Buffer) => { out += d.toString() })
  demo.stderr.on('data', (d: Buffer) => { out += d.toString() })
  for (let i = 0; i < 1800 && !out.includes('Request log lines follow') && demo.exitCode === null; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.match(out, /keygate demo is running/, 'the demo built and started in the fresh copy')
  const curls = [...out.matchAll(/# (\d{3}): .*\n\s+curl -i (?:-X (\w+) )?(\S+)(?: -H 'Authorization: Bearer (\S+)')?/g)]
  t.ok(curls.length >= 3, 'it printed its curl lines')
  for (const [, status, method, url, key] of curls) {
    const res = await fetch(url as string, {
      method: method ?? 'GET', headers: key === undefined ? {} : { authorization: `Bearer ${key}` }
    })
    await res.arrayBuffer()
    t.equal(res.status, Number(status), `${method ?? 'GET'} ${String(url)}: ${String(status)}, as printed`)
  }
  const exited = new Promise((resolve) => demo.once('exit', resolve))
  process.kill(-(demo.pid as number), 'SIGINT')
  await exited
})

t.test('docs/tutorial.md, every step, in a fresh directory', async (t) => {
  const blocks = tutorial.get('tutorial') ?? []
  t.ok(blocks.length >= 6, `the tutorial's steps (${blocks.length} blocks)`)
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const [backend, data, admin] = [await freePort(), await freePort(), await freePort()]
  const script = 'set -euo pipefail\n' + blocks.join('\n')
    .replaceAll(':3000', `:${backend}`).replaceAll('listen(3000', `listen(${backend}`)
    .replaceAll(':8080', `:${data}`).replaceAll(':8081', `:${admin}`)
  const env: NodeJS.ProcessEnv = { ...process.env, KEYGATE_REDIS_URL: redis.url }
  delete env.KEYGATE_CONFIG
  const run = spawn('bash', ['-c', script], { cwd: dir, env, detached: true })
  t.teardown(() => { stopGroup(run) })
  let out = ''
  run.stdout.on('data', (d: Buffer) => { out += d.toString() })
  run.stderr.on('data', (d: Buffer) => { out += d.toString() })
  const code = await new Promise<number | null>((resolve) => run.once('exit', resolve))
  t.equal(code, 0, `the script ran to its end:\n${out}`)
  const lines = out.split('\n')
  t.match(out, /keygate\.yaml: OK \(1 routes, 2 rules\)/, 'config check')
  t.match(out, /^redis \(.*\): ok/m, 'config check --connect reached Redis')
  t.match(out, /^upstream notes \(.*\): ok/m, '...and the backend')
  t.match(out, /Copy it now/, 'keygate init printed the admin key')
  const statuses = lines.filter((l) => /^\d{3}$/.test(l))
  t.same(statuses, ['401', '403', '401'], 'no key: 401; a missing permission: 403; a deactivated user: 401')
  const answer = lines.find((l) => l.startsWith('{"method":"GET"'))
  t.match(JSON.parse(answer ?? '{}'), { path: '/notes/1', user: 'alice', org: 'acme', saw_the_key: false },
    'the backend was reached as alice, without the key')
})
