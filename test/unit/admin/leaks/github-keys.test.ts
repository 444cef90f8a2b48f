import t from 'tap'
import { generateKeyPairSync, sign } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createGithubKeys, parseKeyList, REFETCH_EVERY_MS } from '../../../../src/admin/leaks/github-keys.js'

const pem = (k: ReturnType<typeof generateKeyPairSync>['publicKey']): string => k.export({ type: 'spki', format: 'pem' }) as string

t.test('an unknown identifier fetches the list again, at most once a minute', async (t) => {
  const first = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const second = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const listed = [{ key_identifier: 'one', key: pem(first.publicKey), is_current: true }]
  let fetches = 0
  const server = createServer((_req, res) => {
    fetches++
    res.end(JSON.stringify({ public_keys: listed }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  let now = 1_000_000
  const keys = createGithubKeys({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, timeoutMs: 2000, now: () => now })
  const body = Buffer.from('[]')
  const sig = (k: typeof first): string => sign('sha256', body, { key: k.privateKey, dsaEncoding: 'der' }).toString('base64')

  t.equal(await keys.check('one', sig(first), body), 'valid', 'fetched when first needed')
  t.equal(fetches, 1)
  t.equal(await keys.check('one', sig(first), Buffer.from('[ ]')), 'invalid', 'another body: invalid')
  t.equal(await keys.check('one', sig(second), body), 'invalid', 'another key: invalid')

  listed.push({ key_identifier: 'two', key: pem(second.publicKey), is_current: true })
  t.equal(await keys.check('two', sig(second), body), 'invalid', 'a key GitHub just added, within the minute: not fetched yet')
  t.equal(fetches, 1, 'no fetch within a minute of the last')
  now += REFETCH_EVERY_MS
  t.equal(await keys.check('two', sig(second), body), 'valid', 'a minute later, the unknown identifier fetches the list again')
  t.equal(fetches, 2)
  for (let i = 0; i < 5; i++) await keys.check(`forged-${i}`, sig(second), body)
  t.equal(fetches, 2, 'forged identifiers right after cost no fetch')
})

t.test('a list that cannot be fetched: unavailable until one was', async (t) => {
  const keys = createGithubKeys({ url: 'http://127.0.0.1:1/', timeoutMs: 500 })
  t.equal(await keys.check('one', 'AAAA', Buffer.from('[]')), 'unavailable')
})

t.test('only P-256 keys with string identifiers are kept', async (t) => {
  const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' })
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const list = parseKeyList({
    public_keys: [
      { key_identifier: 'a', key: pem(p256.publicKey) },
      { key_identifier: 'b', key: pem(p384.publicKey) },
      { key_identifier: 'c', key: pem(rsa.publicKey) },
      { key_identifier: 4, key: pem(p256.publicKey) },
      { key_identifier: 'e', key: 'not a pem' },
      null
    ]
  })
  t.same([...list.keys()], ['a'])
  t.throws(() => parseKeyList({ keys: [] }), 'no public_keys array')
})
