import t from 'tap'
import { cacheName, RecordCache } from '../../../src/cache/record-cache.js'

t.test('each kind is looked up by its bare id, and set/delete take the cache name', async (t) => {
  const cache = new RecordCache(10)
  cache.set(cacheName.key('AbCdEfGhIjKlMnOp'), 'key record', 1, true)
  cache.set(cacheName.user('alice'), 'user record', 2, false)
  cache.set(cacheName.role('reader'), null, 3, true)
  t.same(cache.key('AbCdEfGhIjKlMnOp'), { value: 'key record', at: 1, tracked: true, used: true })
  t.equal(cache.user('alice')?.value, 'user record')
  t.equal(cache.role('reader')?.value, null, 'a negative entry is an entry')
  t.equal(cache.key('alice'), undefined, 'kinds do not mix')
  t.equal(cache.user('AbCdEfGhIjKlMnOp'), undefined)
  t.equal(cache.size, 3)
  cache.delete(cacheName.user('alice'))
  t.equal(cache.user('alice'), undefined)
  t.equal(cache.size, 2)
  cache.clear()
  t.equal(cache.size, 0)
  t.throws(() => { cache.set('x:1', null, 0, false) }, /not a cache name/)
})

t.test('replacing an entry never evicts, and the bound holds over all kinds', async (t) => {
  const cache = new RecordCache(3)
  cache.set(cacheName.key('a'), 1, 0, true)
  cache.set(cacheName.user('u'), 2, 0, true)
  cache.set(cacheName.role('r'), 3, 0, true)
  cache.set(cacheName.key('a'), 4, 5, false)
  t.equal(cache.counters.evictions, 0)
  t.equal(cache.key('a')?.value, 4)
  for (let i = 0; i < 50; i++) {
    cache.set(cacheName.key('k' + i), i, 0, true)
    t.ok(cache.size <= 3, 'never more than max_entries')
  }
  t.equal(cache.counters.evictions, 50)
})

t.test('CLOCK: an entry used since the scan last passed gets a second chance', async (t) => {
  const cache = new RecordCache(4)
  for (const id of ['a', 'b', 'c', 'd']) cache.set(cacheName.key(id), id, 0, true)
  cache.key('a') // used: survives the next eviction
  cache.set(cacheName.key('e'), 'e', 0, true)
  t.ok(cache.key('a'), 'the used entry stayed')
  t.equal(cache.key('b'), undefined, 'the oldest unused entry went')
  t.equal(cache.counters.evictions, 1)
})

t.test('eviction takes from the largest kind, so shared user and role records stay', async (t) => {
  const cache = new RecordCache(5)
  cache.set(cacheName.role('reader'), 'role', 0, true)
  cache.set(cacheName.user('alice'), 'user', 0, true)
  for (let i = 0; i < 20; i++) cache.set(cacheName.key('k' + i), i, 0, true)
  t.ok(cache.role('reader'), 'the role is still cached')
  t.ok(cache.user('alice'), 'the user is still cached')
  t.equal(cache.size, 5)
})

t.test('an id cut from a header (a sliced string) finds the entry stored under a copy', async (t) => {
  const header = 'Bearer kg_' + 'AbCdEfGhIjKlMnOp' + '_' + 'x'.repeat(38)
  const id = header.slice(10, 26)
  const cache = new RecordCache(2)
  cache.set(cacheName.key(id), 'v', 0, true)
  t.equal(cache.key('AbCdEfGhIjKlMnOp')?.value, 'v')
})

t.test('an id that UTF-8 cannot carry (a lone surrogate) is still found under its own name', async (t) => {
  const odd = 'user-with-a-\uD800-in-it'
  const cache = new RecordCache(2)
  cache.set(cacheName.user(odd), 'v', 0, true)
  t.equal(cache.user(odd)?.value, 'v')
  t.equal(cache.user('user-with-a-\uFFFD-in-it'), undefined, 'and not under the replacement character')
})
