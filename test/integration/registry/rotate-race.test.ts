/**
 * A revoke that lands between `keys rotate` reading the old key and writing the
 * new one aborts the rotation (WATCH): no replacement is minted for a revoked key.
 */
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { fullAdmin } from '../../helpers/fixtures.js'
import { startGateway } from '../../helpers/gateway.js'

type Client = InstanceType<typeof Redis>

/**
 * The admin actions' client, with `during` run right after the rotation has read the old key
 * record, on whichever connection the rotation reads it (its own, a duplicate).
 */
function racing (client: Client, keyName: string, during: () => Promise<void>): { client: Client, raced: () => boolean } {
  let raced = false
  const wrap = (target: Client): Client => new Proxy(target, {
    get (t, prop, receiver) {
      if (prop === 'hgetall') {
        return async (name: string) => {
          const fields = await t.hgetall(name)
          if (name === keyName && !raced) {
            raced = true
            await during()
          }
          return fields
        }
      }
      if (prop === 'duplicate') return (...args: Parameters<Client['duplicate']>) => wrap(t.duplicate(...args))
      const value: unknown = Reflect.get(t, prop, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value
    }
  })
  return { client: wrap(client), raced: () => raced }
}

/** A gateway, a BOT key to rotate (and its Redis key), and a second client to race with. */
async function rotationWorld (t: Test) {
  const gw = await startGateway(t)
  const old = await gw.fixtures.botKey('reader', 'acme')
  const other = new Redis(gw.redis.url)
  t.teardown(() => { other.disconnect() })
  return { gw, old, other, keyName: gw.fixtures.keys.key(old.id) }
}

t.test('a revoke racing a rotation wins, and nothing is written', async (t) => {
  const { gw, old, other, keyName } = await rotationWorld(t)

  // a revoke from another client slipped in right after the rotation read the old key
  const race = racing(gw.client, keyName, async () => { await other.hset(keyName, 'status', 'revoked') })
  const admin = fullAdmin(race.client, gw.fixtures.keys, 'kg_', 'test')
  const before = await gw.client.scard(gw.fixtures.keys.keys)

  await t.rejects(admin.rotateKey(old.id, 60_000), { name: 'AdminError', message: /changed during the rotation/ })
  t.ok(race.raced(), 'the revoke did race the rotation')
  t.equal(await gw.client.scard(gw.fixtures.keys.keys), before, 'no replacement key was created')
  t.equal(await gw.client.hget(keyName, 'status'), 'revoked')
  t.equal(await gw.client.hget(keyName, 'replaced_by'), null)

  const fresh = await gw.fixtures.botKey('reader', 'acme')
  const rotated = await fullAdmin(gw.client, gw.fixtures.keys, 'kg_', 'test').rotateKey(fresh.id, 60_000)
  t.equal(rotated.replaces, fresh.id, 'without a race, rotation goes through')
})

t.test('another admin operation on the shared connection neither lifts the rotation\'s WATCH nor is aborted by it', async (t) => {
  // WATCH belongs to a connection. Had the rotation watched on the connection every
  // admin operation shares, this create's EXEC would run under that WATCH (and be
  // aborted, the key revoked in between: a "created" key never written), and would
  // clear the WATCH, so the rotation would then mint a replacement for a revoked key.
  const { gw, old, other, keyName } = await rotationWorld(t)
  const shared = fullAdmin(gw.client, gw.fixtures.keys, 'kg_', 'test')
  let created: { id: string } | undefined
  const race = racing(gw.client, keyName, async () => {
    await other.hset(keyName, 'status', 'revoked')
    created = (await shared.createKey({
      type: 'bot',
      role: 'reader',
      org: 'acme',
      name: 'made during the rotation'
    })).result
  })
  const admin = fullAdmin(race.client, gw.fixtures.keys, 'kg_', 'test')

  await t.rejects(admin.rotateKey(old.id, 60_000), { name: 'AdminError', message: /changed during the rotation/ })
  t.ok(race.raced())
  t.ok(created, 'the create reported success')
  t.equal(await gw.client.hget(gw.fixtures.keys.key(created?.id ?? ''), 'status'), 'active', 'and the key it reported was written')
  t.equal(await gw.client.hget(keyName, 'replaced_by'), null, 'the rotation wrote nothing')
})

t.test('a command failing inside a transaction fails the operation instead of reporting success', async (t) => {
  const gw = await startGateway(t)
  // a hand edit left the role index as a string: SADD inside the MULTI gets WRONGTYPE
  await gw.client.set(gw.fixtures.keys.roles, 'not a set')
  const admin = fullAdmin(gw.client, gw.fixtures.keys, 'kg_', 'test')
  await t.rejects(admin.putRole('auditor', ['audit:read']), /WRONGTYPE/)
})
