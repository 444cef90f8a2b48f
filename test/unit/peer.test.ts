// One client, one bucket: the unknown-key budget and the failed sign-in limit count
// a client address the same way (src/peer.ts).
import t from 'tap'
import { peerOf } from '../../src/peer.js'

t.test('a peer: the IPv4 address (also IPv4-mapped), the IPv6 /64 in one spelling', async (t) => {
  const cases: Array<[string | undefined, string, string?]> = [
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::ffff:10.0.0.7', '10.0.0.7'],
    ['::FFFF:10.0.0.7', '10.0.0.7', 'the mapped prefix in any case'],
    ['::1', '0:0:0:0::/64'],
    ['::', '0:0:0:0::/64'],
    ['2001:db8::', '2001:db8:0:0::/64'],
    ['2001:0DB8:0000:0001:0:0:0:1', '2001:db8:0:1::/64'],
    ['2001:db8:0:1::5', '2001:db8:0:1::/64'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64', 'same /64, same peer'],
    ['2001:DB8:0001:0002::a%eth0', '2001:db8:1:2::/64', 'case, leading zeros and zone ignored'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b::192.0.2.1', 'an IPv4 tail (NAT64): the whole address, one per IPv4 client'],
    ['64:ff9b::192.0.2.2', '64:ff9b::192.0.2.2'],
    [undefined, '(unknown)'],
    ['', '(unknown)']
  ]
  for (const [address, peer, why] of cases) t.equal(peerOf(address), peer, why ?? String(address))
})

t.test('the unknown-key budget and the sign-in limit count a client as peerOf does', async (t) => {
  const { UnknownKeyLimit } = await import('../../src/cache/unknown-key-limit.js')
  const limit = new UnknownKeyLimit({ perSecond: 0.001, burst: 1, maxPeers: 100 })
  t.ok(limit.take('2001:db8:1:2::9', 0))
  t.equal(limit.take('2001:DB8:1:2:ffff::1', 0), undefined, 'another address of the same /64: the same bucket')
  t.ok(limit.take('64:ff9b::192.0.2.1', 0))
  t.ok(limit.take('64:ff9b::192.0.2.2', 0), 'two IPv4 clients behind NAT64: two buckets')
  const source = await import('node:fs').then(({ readFileSync }) => readFileSync(new URL('../../src/admin/api/index.ts', import.meta.url), 'utf8'))
  t.match(source, /import \{ peerOf \} from '\.\.\/\.\.\/peer\.js'/, 'the admin sign-in counts peers with the same function')
})
