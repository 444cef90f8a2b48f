/**
 * A revoke that lands between `keys rotate` reading the old key and writing the
 * new one aborts the rotation (WATCH): no replacement is minted for a revoked key.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { AdminStore } from '../../src/registry/admin-store.js'
import { startGateway } from '../helpers/gateway.js'

t.test('a revoke racing a rotation wins, and nothing is written', async (t) => {
  const gw = await startGateway(t)
  const old = await gw.fixtures.botKey('reader', 'acme')
  const other = new Redis(gw.redis.url)
  t.teardown(() => { other.disconnect() })
  const keyName = gw.fixtures.keys.key(old.id)

  // The store's connection, with a revoke from another client slipped in right after
  // the rotation has read the old key record.
  let raced = false
  const racing = new Proxy(gw.client, {
    get (target, prop, receiver) {
      if (prop === 'hgetall') {
        return async (name: string) => {
          const fields = await target.hgetall(name)
          if (name === keyName && !raced) {
            raced = true
            await other.hset(keyName, 'status', 'revoked')
          }
          return fields
        }
      }
      const value: unknown = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    }
  })
  const store = new AdminStore(racing, gw.fixtures.keys, 'kg_', 'test')
  const before = await gw.client.scard(gw.fixtures.keys.keys)

  await t.rejects(store.rotateKey(old.id, 60_000), { name: 'AdminError', message: /changed during the rotation/ })
  t.ok(raced, 'the revoke did race the rotation')
  t.equal(await gw.client.scard(gw.fixtures.keys.keys), before, 'no replacement key was created')
  t.equal(await gw.client.hget(keyName, 'status'), 'revoked')
  t.equal(await gw.client.hget(keyName, 'replaced_by'), null)

  const fresh = await gw.fixtures.botKey('reader', 'acme')
  const rotated = await new AdminStore(gw.client, gw.fixtures.keys, 'kg_', 'test').rotateKey(fresh.id, 60_000)
  t.equal(rotated.replaces, fresh.id, 'without a race, rotation goes through on the same connection')
})
