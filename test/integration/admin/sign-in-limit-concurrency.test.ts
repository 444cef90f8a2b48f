/**
 * The admin API's limit of failed sign-ins (admin.sign_in_failures_per_minute) holds
 * against concurrency: an attempt counts from its start, before its credential is
 * looked up, so 60 forged keys sent at once get at most the limit evaluated (401) and
 * the rest 429. The admin token's failures and key failures are counted apart: key
 * failures from an address never lock the right admin token out, and wrong tokens
 * never lock keys out.
 */
import t from 'tap'
import { assembleKey } from '../../../src/registry/key-format.js'
import { adminCall as call, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { parsePromText, valueOf } from '../../helpers/prom-text.js'

const TOKEN = 'concurrency-admin-token-0123456789abcdef'
const LIMIT = 10

async function metric (gw: TestGateway, name: string): Promise<number | undefined> {
  return valueOf(parsePromText((await gw.admin('GET', '/metrics')).body), name)
}

let forged = 0
function forgedKey (gw: TestGateway): string {
  return assembleKey(gw.config.keys.prefix, ('Q' + (forged++).toString(36).padStart(15, '0')).slice(0, 16), 'S'.repeat(32))
}

function count (statuses: number[], status: number): number {
  return statuses.filter((s) => s === status).length
}

t.test('60 concurrent sign-ins with forged keys: at most the limit evaluated, the rest 429', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  t.equal(gw.config.admin.sign_in_failures_per_minute, LIMIT)
  const keys = Array.from({ length: 60 }, () => forgedKey(gw))
  // Redis answers nothing for 300 ms (under redis.command_timeout_ms): every lookup is
  // in flight at once, as on a loaded registry
  await gw.client.call('CLIENT', 'PAUSE', '300', 'ALL')
  const statuses = (await Promise.all(keys.map(async (key) => await call(gw, 'GET', '/admin/v1/session', key)))).map((r) => r.status)
  t.ok(count(statuses, 401) <= LIMIT, `at most ${LIMIT} evaluated (401: ${count(statuses, 401)})`)
  t.equal(count(statuses, 401) + count(statuses, 429), 60, 'every other one 429')
  t.ok((await metric(gw, 'keygate_admin_sign_in_failures_total') ?? 0) <= LIMIT, 'at most the limit counted as failures')
})

t.test('60 concurrent wrong admin tokens: at most the limit evaluated', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const statuses = (await Promise.all(Array.from({ length: 60 }, async (_, i) => await call(gw, 'GET', '/admin/v1/session', `wrong-token-${i}-0123456789abcdef`)))).map((r) => r.status)
  t.ok(count(statuses, 401) <= LIMIT, `at most ${LIMIT} evaluated (401: ${count(statuses, 401)})`)
  t.equal(count(statuses, 401) + count(statuses, 429), 60)
})

t.test('the admin token and keys are limited apart', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('keyadmin', ['keygate:admin'])
  await gw.fixtures.user('root', 'acme', 'keyadmin')
  const adminKey = await gw.fixtures.personalKey('root')

  for (let i = 0; i < LIMIT; i++) t.equal((await call(gw, 'GET', '/admin/v1/session', forgedKey(gw))).status, 401, `key failure ${i + 1}`)
  t.equal((await call(gw, 'GET', '/admin/v1/session', forgedKey(gw))).status, 429, 'the next key: 429')
  t.equal((await call(gw, 'GET', '/admin/v1/session', adminKey.key)).status, 429, 'a right key too: no key is checked while keys are limited')
  t.equal((await call(gw, 'GET', '/admin/v1/session', TOKEN)).status, 200, 'the right admin token is not locked out by key failures')

  for (let i = 0; i < LIMIT; i++) t.equal((await call(gw, 'GET', '/admin/v1/session', `wrong-token-${i}-0123456789abcdef`)).status, 401, `token failure ${i + 1}`)
  const limited = await call(gw, 'GET', '/admin/v1/session', TOKEN)
  t.equal(limited.status, 429, 'the right token after the token\'s own failures: 429, so a right guess looks like a wrong one')
  t.ok(Number(limited.headers['retry-after']) >= 1, 'Retry-After')
  t.equal((await call(gw, 'GET', '/admin/v1/session')).status, 401, 'no credential: 401, whatever the limits')
})

t.test('wrong tokens never lock keys out', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('keyadmin', ['keygate:admin'])
  await gw.fixtures.user('root', 'acme', 'keyadmin')
  const adminKey = await gw.fixtures.personalKey('root')
  for (let i = 0; i < LIMIT; i++) await call(gw, 'GET', '/admin/v1/session', `wrong-token-${i}-0123456789abcdef`)
  t.equal((await call(gw, 'GET', '/admin/v1/session', TOKEN)).status, 429, 'the token is limited')
  t.equal((await call(gw, 'GET', '/admin/v1/session', adminKey.key)).status, 200, 'a key signs in')
})
