/**
 * The README's front door: the demo starts its own Redis, upstream and gateway,
 * prints curl lines that give what they promise, its OpenID provider signs a person in
 * to the console, and Ctrl-C stops everything.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { runCli } from '../../helpers/cli.js'
import { freePort } from '../../helpers/net.js'
import { sendCallback, walkToCallback } from '../../helpers/oidc-provider.js'

const DEMO = fileURLToPath(new URL('../../../dist/demo/main.js', import.meta.url))

async function portOpen (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => { s.destroy(); resolve(true) })
    s.once('error', () => resolve(false))
  })
}

t.test('npm run demo: the printed curl lines give 200, 401 and 403; Ctrl-C stops everything', async (t) => {
  const port = await freePort()
  const adminPort = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, KEYGATE_LISTEN: `127.0.0.1:${port}`, KEYGATE_ADMIN_LISTEN: `127.0.0.1:${adminPort}` }
  delete env.KEYGATE_REDIS_URL
  delete env.KEYGATE_CONFIG
  const child = spawn(process.execPath, [DEMO], { env })
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { out += d.toString() })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  for (let i = 0; i < 600 && !out.includes('Request log lines follow'); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.match(out, /keygate demo is running/)

  const curls = [...out.matchAll(/# (\d{3}): .*\n\s+curl -i (?:-X (\w+) )?(\S+)(?: -H 'Authorization: Bearer (\S+)')?/g)]
  t.ok(curls.length >= 5, 'the demo prints its curl lines')
  const statuses = new Set<number>()
  for (const [, expected, method, url, key] of curls) {
    const res = await fetch(url as string, { method: method ?? 'GET', headers: key === undefined ? {} : { authorization: `Bearer ${key}` } })
    t.equal(res.status, Number(expected), `${method ?? 'GET'} ${url ?? ''} -> ${expected ?? ''}`)
    statuses.add(res.status)
  }
  t.same([...statuses].sort(), [200, 401, 403])

  // the console the demo prints, and the admin key it prints to sign in with
  const consoleUrl = /console\s+(http:\/\/\S+\/console\/)/.exec(out)?.[1] ?? ''
  const page = await fetch(consoleUrl)
  t.equal(page.status, 200, `the console is served at ${consoleUrl}`)
  t.match(await page.text(), /<title>keygate console<\/title>/)
  const adminKey = /signs in to the console as an admin with:\n\s+(\S+)/.exec(out)?.[1] ?? ''
  const session = await fetch(new URL('../admin/v1/session', consoleUrl), { headers: { authorization: `Bearer ${adminKey}` } })
  t.equal(session.status, 200, 'the printed admin key signs in')
  t.equal(((await session.json()) as { admin?: boolean }).admin, true, 'as an admin')

  // the demo's own OpenID provider: alice signs in through its login page, no account anywhere
  t.match(out, /Sign in with the demo provider: login alice or ops/)
  const adminOrigin = new URL(consoleUrl).origin
  const walk = await walkToCallback(adminOrigin, 'alice', { redirectUri: `${adminOrigin}/console/sso/callback` })
  const signedIn = await sendCallback(walk.callback, walk.loginCookie)
  t.ok(signedIn.session !== undefined, 'alice signed in through the demo provider')
  const hers = await fetch(new URL('../admin/v1/session', consoleUrl), { headers: { cookie: `keygate_session=${signedIn.session ?? ''}` } })
  t.match(await hers.json(), { principal: { kind: 'session', user: 'alice' }, scope: 'self' })

  const redisPort = Number(/redis:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1])
  t.ok(await portOpen(redisPort), 'the private redis-server is up')

  // the printed export points the CLI at the demo's registry: alice is there
  const exported = /^\s*export KEYGATE_REDIS_URL=(\S+)$/m.exec(out)?.[1]
  t.equal(exported, `redis://127.0.0.1:${redisPort}`, 'the demo prints the export line for the CLI')
  const users = await runCli(['users', 'list', '--json'], { KEYGATE_REDIS_URL: exported ?? '' })
  t.equal(users.code, 0, users.stderr)
  const ids = (JSON.parse(users.stdout) as Array<Record<string, unknown>>).map((u) => u.id ?? u.user_id)
  t.ok(ids.includes('alice'), `the CLI reads the demo's users with it (${ids.join(', ')})`)
  child.kill('SIGINT')
  const code = await new Promise((resolve) => child.once('exit', resolve))
  t.equal(code, 0)
  let redisGone = false
  for (let i = 0; i < 50 && !redisGone; i++) {
    redisGone = !await portOpen(redisPort)
    if (!redisGone) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.ok(redisGone, 'Ctrl-C stopped the private redis-server')
  t.notOk(await portOpen(port), 'and the gateway')
})
