/**
 * `keygate webhooks add|list|test|remove` (docs/webhooks.md), and a key created by the
 * CLI (another process than the gateway) reaching the receiver as `key.created`.
 */
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { eventually, startGateway } from '../../helpers/gateway.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'

t.test('the CLI adds, lists, tests and removes an endpoint; its own changes are events', async (t) => {
  const gw = await startGateway(t, { yaml: 'webhooks: { allow_private_targets: true, poll_ms: 30 }' })
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const strict = cliEnv(gw)
  const refused = await runCli(['webhooks', 'add', receiver.url, '--events', 'key.created'], strict)
  t.not(refused.code, 0, 'a loopback URL is refused without allow_private_targets')
  t.match(refused.stderr, /refused/)

  const env = cliEnv(gw)
  const file = env.KEYGATE_CONFIG as string
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), webhooks: { allow_private_targets: true } }))
  const added = await runCli(['webhooks', 'add', receiver.url, '--events', 'key.created', '--json'], env)
  t.equal(added.code, 0, added.stderr)
  const hook = JSON.parse(added.stdout) as { id: string, secret: string }
  t.match(hook.secret, /^whsec_/)
  receiver.secret = hook.secret
  const listed = await runCli(['webhooks', 'list'], env)
  t.match(listed.stdout, hook.id)
  t.notMatch(listed.stdout, /whsec_/, 'never the secret again')

  const created = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--json'], env)
  t.equal(created.code, 0, created.stderr)
  const keyId = (JSON.parse(created.stdout) as { id: string }).id
  t.ok(await eventually(async () => receiver.received.length >= 1, 5000) >= 0, 'the CLI\'s key.created arrived')
  t.match(JSON.parse(receiver.received[0]?.body ?? '{}'), { type: 'key.created', data: { key_id: keyId } })

  t.equal((await runCli(['webhooks', 'test', hook.id], env)).code, 0)
  t.ok(await eventually(async () => receiver.received.some((r) => r.body.includes('webhook.test')), 5000) >= 0)
  t.ok(receiver.received.every((r) => r.verified === true))
  t.equal((await runCli(['webhooks', 'remove', hook.id], env)).code, 0)
  t.equal(await gw.client.scard(`${gw.prefix}webhooks`), 0)
})
