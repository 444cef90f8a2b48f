/**
 * `npm run demo`: a working keygate in one command.
 *
 * Starts a private redis-server on a free port (unless KEYGATE_REDIS_URL is set),
 * seeds an org with roles, a user with a personal key and a BOT key, and an admin
 * with a key for the console, starts the demo upstream, a local OpenID provider
 * (oidc-provider.ts: sign in to the console as alice or ops with no account anywhere)
 * and the gateway, and prints the console URL and curl lines to paste. Ctrl-C stops
 * everything it started.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseConfig } from '../config/load.js'
import { adminActions, adminWing } from '../admin/actions/index.js'
import { FULL_ADMIN } from '../admin/model/principal.js'
import { createRedis, waitForRedis } from '../registry/redis-client.js'
import { startGateway, splitHostPort } from '../server.js'
import { createDemoUpstream } from './upstream.js'

async function freePort (): Promise<number> {
  const s: Server = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const address = s.address()
  await new Promise((resolve) => s.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

async function portFree (port: number): Promise<boolean> {
  const s = createServer()
  return await new Promise((resolve) => {
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

async function startPrivateRedis (): Promise<{ url: string, child: ChildProcess }> {
  if (spawnSync('redis-server', ['--version']).error !== undefined) {
    process.stderr.write(
      'The demo needs Redis and could not find `redis-server`.\n' +
      'Install it (Debian/Ubuntu: `sudo apt-get install -y redis-server`; macOS: `brew install redis`),\n' +
      'or point the demo at a running Redis: KEYGATE_REDIS_URL=redis://host:6379 npm run demo\n'
    )
    process.exit(1)
  }
  const port = await freePort()
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'
  ], {
    cwd: mkdtempSync(join(tmpdir(), 'keygate-demo-')),
    stdio: 'ignore'
  })
  const url = `redis://127.0.0.1:${port}`
  try {
    await waitForRedis(url)
  } catch (err: unknown) {
    child.kill()
    throw err
  }
  return { url, child }
}

async function main (): Promise<void> {
  const external = process.env.KEYGATE_REDIS_URL
  const redis = external !== undefined && external !== ''
    ? {
        url: external,
        child: undefined
      }
    : await startPrivateRedis()
  // On a shared Redis the demo keeps to its own namespace (hash-tagged on a Cluster,
  // where the registry must live in one slot: docs/topologies.md).
  const prefix = redis.child !== undefined
    ? 'keygate:'
    : redis.url.startsWith('redis+cluster') ? '{keygate-demo}:' : 'keygate-demo:'

  const upstream = createDemoUpstream()
  const upstreamPort = await freePort()
  await new Promise<void>((resolve) => upstream.listen(upstreamPort, '127.0.0.1', resolve))

  let listen = process.env.KEYGATE_LISTEN ?? '127.0.0.1:8080'
  if (!await portFree(splitHostPort(listen).port)) listen = `127.0.0.1:${await freePort()}`
  const adminListen = process.env.KEYGATE_ADMIN_LISTEN ?? `127.0.0.1:${await portFree(8081) ? 8081 : await freePort()}`
  const { host: adminHost, port: adminPort } = splitHostPort(adminListen)
  const adminOrigin = `http://${adminHost === '0.0.0.0' || adminHost === '' ? '127.0.0.1' : adminHost}:${adminPort}`

  // the local OpenID provider: a dev dependency, so a production install runs the demo without it
  const clientSecret = randomBytes(24).toString('base64url')
  const redirectUri = `${adminOrigin}/console/sso/callback`
  let provider: { issuer: string, close: () => Promise<void> } | undefined
  try {
    const { startDemoProvider } = await import('./oidc-provider.js')
    provider = await startDemoProvider({
      port: await freePort(),
      clients: [{ client_id: 'keygate-demo', client_secret: clientSecret, redirect_uris: [redirectUri] }],
      accounts: {
        alice: { email: 'alice@example.com', email_verified: true, name: 'Alice' },
        ops: { email: 'ops@example.com', email_verified: true, name: 'Ops' }
      }
    })
  } catch (err: unknown) {
    process.stderr.write(`(no SSO in this demo: the local OpenID provider did not start: ${(err as Error).message}; ` +
      '`npm install` brings the dev dependency oidc-provider)\n')
  }
  const sso = provider === undefined
    ? ''
    : `
sso:
  oidc:
    issuer: "${provider.issuer}"
    client_id: keygate-demo
    redirect_uri: "${redirectUri}"
    match: sub
    display_name: the demo provider
`

  const config = parseConfig(`
listen: "${listen}"
admin_listen: "${adminListen}"
redis: { prefix: "${prefix}" }
upstreams:
  core: { url: "http://127.0.0.1:${upstreamPort}" }
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /inventory, upstream: core, strip_prefix: true }
rules:
  - { method: GET,  path: /inventory/health,   public: true }
  - { method: GET,  path: /inventory/*,        permissions: [inventory:read] }
  - { method: GET,  path: /api/v1/users,       permissions: [users:read] }
  - { method: POST, path: /api/v1/users,       permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*, permissions: [orgs:read], org_param: org }
${sso}`, { KEYGATE_REDIS_URL: redis.url, KEYGATE_OIDC_CLIENT_SECRET: clientSecret }, 'demo')

  // Seed: the same admin actions the CLI uses, through the same client (any topology the URL names).
  const client = createRedis(config.redis, { queueWhileConnecting: true })
  const actions = adminActions(adminWing(config, client), FULL_ADMIN, 'demo')
  await actions.putRole(
    'viewer',
    ['users:read', 'orgs:read', 'inventory:read', 'keygate:keys:self'],
    'reads users, its org and the inventory; manages its own keys'
  )
  await actions.putRole('editor', ['users:*', 'orgs:read'], 'manages users')
  await actions.putRole('keygate-admin', ['keygate:admin'], 'full control of keygate: admin API and console')
  await actions.putUser('alice', { org: 'acme', role: 'viewer', name: 'Alice', email: 'alice@example.com' })
  await actions.putUser('ops', { org: 'acme', role: 'keygate-admin', name: 'Ops', email: 'ops@example.com' })
  const personal = (await actions.createKey({ type: 'personal', user: 'alice', name: 'alice laptop' })).result
  const bot = (await actions.createKey({
    type: 'bot',
    role: 'editor',
    org: 'acme',
    name: 'ci deploy bot',
    createdBy: 'alice'
  })).result
  const admin = (await actions.createKey({ type: 'personal', user: 'ops', name: 'ops console sign-in' })).result
  client.disconnect()

  const app = await startGateway(config)
  const base = `http://${listen}`
  const signInLine = provider === undefined
    ? '(sign in with a key below)'
    : '(Sign in with the demo provider: login alice or ops, any password (other names are refused by keygate); ' +
      `or with a key below)
  provider    ${provider.issuer}  (a local OpenID provider: no account anywhere)`
  process.stdout.write(`
keygate demo is running
  gateway     ${base}  (admin: http://${adminHost}:${adminPort}/readyz)
  console     ${adminOrigin}/console/  ${signInLine}
  redis       ${redis.child === undefined
    ? redis.url + ' (yours, namespace ' + prefix + ')'
    : 'private redis-server on ' + redis.url}
  cli         point the keygate CLI at this registry (keys, users, roles, check) with:
                export KEYGATE_REDIS_URL=${redis.url}${redis.child === undefined
                  ? `   (and redis.prefix: "${prefix}")`
                  : ''}
  upstream    demo backend on 127.0.0.1:${upstreamPort}, reachable only through the gateway

  alice (org acme, role viewer: users:read orgs:read inventory:read keygate:keys:self) has a personal key;
  she can also sign in to the console with it and manage her own keys:
    ${personal.key}
  a BOT key in org acme with role editor (users:* orgs:read):
    ${bot.key}
  ops (role keygate-admin: keygate:admin) signs in to the console as an admin with:
    ${admin.key}

Try it (paste into another terminal):

  # 200: alice's personal key may read users
  curl -i ${base}/api/v1/users -H 'Authorization: Bearer ${personal.key}'

  # 200: the BOT key may create users (the upstream sees X-Auth-Key-Type: bot)
  curl -i -X POST ${base}/api/v1/users -H 'Authorization: Bearer ${bot.key}'

  # 401: no key
  curl -i ${base}/api/v1/users

  # 401: a mistyped key is refused locally (checksum), without asking Redis
  curl -i ${base}/api/v1/users -H 'Authorization: Bearer ${mistyped(personal.key)}'

  # 403: alice's role lacks users:write
  curl -i -X POST ${base}/api/v1/users -H 'Authorization: Bearer ${personal.key}'

  # 403: org mismatch (the key belongs to acme)
  curl -i ${base}/api/v1/orgs/globex/projects -H 'Authorization: Bearer ${personal.key}'

  # 200: the backend under its own prefix: /inventory/items reaches it as /items (strip_prefix)
  curl -i ${base}/inventory/items -H 'Authorization: Bearer ${personal.key}'

  # 200: a public path, no key (the backend sees X-Auth-Anonymous: true)
  curl -i ${base}/inventory/health

  # 401: the rest of /inventory needs a key
  curl -i ${base}/inventory/items

Request log lines follow below. Ctrl-C stops the gateway, the upstream and the private Redis.

`)

  let stopping = false
  const stop = (): void => {
    if (stopping) return
    stopping = true
    app.close().finally(() => {
      provider?.close().catch(() => {})
      upstream.close()
      upstream.closeAllConnections()
      redis.child?.kill()
      process.exit(0)
    }).catch(() => {})
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

/** The key with its last character changed (never to itself: a key ending in x gets y). */
function mistyped (key: string): string {
  return key.slice(0, -1) + (key.endsWith('x') ? 'y' : 'x')
}

await main()
