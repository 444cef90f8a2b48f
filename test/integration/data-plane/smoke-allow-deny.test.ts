import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'

t.test('a valid personal key with the permission is forwarded with identity headers', async (t) => {
  const gw = await startGateway(t)
  const { key, id } = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', key)
  t.equal(res.status, 200)
  const seen = gw.upstream.last()
  t.equal(seen?.url, '/api/v1/users')
  t.equal(seen?.headers['x-auth-key-id'], id)
  t.equal(seen?.headers['x-auth-user-id'], 'alice')
  t.equal(seen?.headers['x-auth-role'], 'reader')
  t.equal(seen?.headers.authorization, undefined)
  const line = await gw.logOf(res)
  t.equal(line?.reason, 'allowed')
  t.equal(line?.key_id, id)
  t.notOk(gw.rawLogs.join('\n').includes(key), 'the key never reaches a log')
})
