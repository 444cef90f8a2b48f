import t from 'tap'
import { cacheName, cacheNaming, RecordCache } from '../../../src/cache/record-cache.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { INVALID, type KeyRecord } from '../../../src/registry/records.js'

/** A key record whose fields all tell `n` apart. */
function keyRecord (n: number, over: Partial<KeyRecord> = {}): KeyRecord {
  return { type: 'personal', digest: String.fromCharCode(n % 256).repeat(32), org: `org${n}`, user: `user${n}`, role: undefined, status: 'active', expiresAt: undefined, rateLimit: undefined, restriction: undefined, env: 'live', ...over }
}

t.test('each kind is looked up by its bare id, and set/delete take the cache name', async (t) => {
  const cache = new RecordCache(10)
  cache.set(cacheName.key('AbCdEfGhIjKlMnOp'), keyRecord(7), 1, true)
  cache.set(cacheName.user('alice'), 'user record', 2, false)
  cache.set(cacheName.role('reader'), null, 3, true)
  t.same(cache.key('AbCdEfGhIjKlMnOp'), { value: keyRecord(7), at: 1, tracked: true, used: true })
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
  cache.set(cacheName.key('a'), keyRecord(1), 0, true)
  cache.set(cacheName.user('u'), 2, 0, true)
  cache.set(cacheName.role('r'), 3, 0, true)
  cache.set(cacheName.key('a'), keyRecord(4), 5, false)
  t.equal(cache.counters.evictions, 0)
  t.same(cache.key('a'), { value: keyRecord(4), at: 5, tracked: false, used: true })
  for (let i = 0; i < 50; i++) {
    cache.set(cacheName.key('k' + i), keyRecord(i), 0, true)
    t.ok(cache.size <= 3, 'never more than max_entries')
  }
  t.equal(cache.counters.evictions, 50)
})

t.test('CLOCK: an entry used since the scan last passed gets a second chance', async (t) => {
  const cache = new RecordCache(4)
  for (const [i, id] of ['a', 'b', 'c', 'd'].entries()) cache.set(cacheName.key(id), keyRecord(i), 0, true)
  cache.key('a') // used: survives the next eviction
  cache.set(cacheName.key('e'), keyRecord(5), 0, true)
  t.ok(cache.key('a'), 'the used entry stayed')
  t.equal(cache.key('b'), undefined, 'the oldest unused entry went')
  t.equal(cache.counters.evictions, 1)
})

t.test('eviction takes from the largest kind, so shared user and role records stay', async (t) => {
  const cache = new RecordCache(5)
  cache.set(cacheName.role('reader'), 'role', 0, true)
  cache.set(cacheName.user('alice'), 'user', 0, true)
  for (let i = 0; i < 20; i++) cache.set(cacheName.key('k' + i), keyRecord(i), 0, true)
  t.ok(cache.role('reader'), 'the role is still cached')
  t.ok(cache.user('alice'), 'the user is still cached')
  t.equal(cache.size, 5)
})

t.test('an id cut from a header (a sliced string) finds the entry stored under a copy', async (t) => {
  const header = 'Bearer kg_' + 'AbCdEfGhIjKlMnOp' + '_' + 'x'.repeat(38)
  const id = header.slice(10, 26)
  const cache = new RecordCache(2)
  cache.set(cacheName.key(id), INVALID, 0, true)
  t.equal(cache.key('AbCdEfGhIjKlMnOp')?.value, INVALID)
})

t.test('an id that UTF-8 cannot carry (a lone surrogate) is still found under its own name', async (t) => {
  const odd = 'user-with-a-\uD800-in-it'
  const cache = new RecordCache(2)
  cache.set(cacheName.user(odd), 'v', 0, true)
  t.equal(cache.user(odd)?.value, 'v')
  t.equal(cache.user('user-with-a-\uFFFD-in-it'), undefined, 'and not under the replacement character')
})

t.test('a key entry comes back as it was stored, whatever its kind and state', async (t) => {
  const cache = new RecordCache(100)
  const cases: Array<[string, KeyRecord | typeof INVALID | null]> = [
    ['personal', keyRecord(1)],
    ['bot', keyRecord(2, { type: 'bot', user: undefined, role: 'deployer' })],
    ['revoked', keyRecord(3, { status: 'revoked' })],
    ['expiring', keyRecord(4, { expiresAt: Date.UTC(2027, 0, 31) })],
    ['every digest byte', keyRecord(5, { digest: Array.from({ length: 32 }, (_, i) => String.fromCharCode(i * 8 + 7)).join('') })],
    ['invalid', INVALID],
    ['negative', null]
  ]
  for (const [i, [id, value]] of cases.entries()) cache.set(cacheName.key(id), value, 1000 + i, i % 2 === 0)
  for (const [i, [id, value]] of cases.entries()) t.same(cache.key(id), { value, at: 1000 + i, tracked: i % 2 === 0, used: true }, id)
  // a slot freed by an invalidation and reused holds nothing of its former record
  cache.delete(cacheName.key('bot'))
  cache.set(cacheName.key('reused'), null, 5, false)
  t.same(cache.key('reused'), { value: null, at: 5, tracked: false, used: true })
  t.equal(cache.key('bot'), undefined)
  cache.set(cacheName.key('personal'), keyRecord(9, { type: 'bot', user: undefined, role: 'r' }), 6, true)
  t.same(cache.key('personal')?.value, keyRecord(9, { type: 'bot', user: undefined, role: 'r' }), 'a replaced record keeps nothing of the old one')
})

t.test('the key table grows past its first columns and keeps every record', async (t) => {
  const cache = new RecordCache(5000)
  for (let i = 0; i < 3000; i++) cache.set(cacheName.key('k' + i), keyRecord(i), i, true)
  let wrong = 0
  for (let i = 0; i < 3000; i++) if (JSON.stringify(cache.key('k' + i)?.value) !== JSON.stringify(keyRecord(i))) wrong++
  t.equal(wrong, 0, 'all 3,000 records read back intact')
  t.equal(cache.size, 3000)
  cache.clear()
  t.equal(cache.key('k1'), undefined)
  cache.set(cacheName.key('after'), keyRecord(1), 0, true)
  t.same(cache.key('after')?.value, keyRecord(1), 'usable after a flush')
})

t.test('negative entries never evict a record: they have their own bound', async (t) => {
  const cache = new RecordCache(3, 5)
  cache.set(cacheName.key('real'), keyRecord(1), 0, true)
  cache.set(cacheName.user('alice'), 'user', 0, true)
  cache.set(cacheName.role('reader'), 'role', 0, true)
  for (let i = 0; i < 1000; i++) {
    cache.set(cacheName.key('forged' + i), null, 0, true)
    if (cache.negativeSize > 5) t.fail('more negative entries than their bound')
  }
  t.same(cache.key('real')?.value, keyRecord(1), 'the key record is still cached')
  t.equal(cache.user('alice')?.value, 'user')
  t.equal(cache.role('reader')?.value, 'role')
  t.equal(cache.negativeSize, 5)
  t.equal(cache.size, 8, 'size counts records and negative entries')
  t.equal(cache.counters.evictions, 995, 'each negative entry past the bound evicted another negative entry')
  t.same(cache.key('forged999'), { value: null, at: 0, tracked: true, used: true }, 'the newest negative entry is held')
  t.equal(cache.key('forged0'), undefined, 'the oldest went')
})

t.test('records fill max_entries whatever the negative entries hold', async (t) => {
  const cache = new RecordCache(3, 100)
  for (let i = 0; i < 50; i++) cache.set(cacheName.key('n' + i), null, 0, true)
  for (let i = 0; i < 3; i++) cache.set(cacheName.key('k' + i), keyRecord(i), 0, true)
  t.equal(cache.counters.evictions, 0, 'no record was evicted to make room')
  for (let i = 0; i < 3; i++) t.ok(cache.key('k' + i), `record k${i} cached`)
})

t.test('a record and a negative entry of the same name replace each other', async (t) => {
  const cache = new RecordCache(10, 10)
  cache.set(cacheName.key('a'), null, 1, true)
  cache.set(cacheName.key('a'), keyRecord(1), 2, true)
  t.same(cache.key('a')?.value, keyRecord(1), 'a key created after a miss replaces its negative entry')
  t.equal(cache.negativeSize, 0)
  cache.set(cacheName.key('a'), null, 3, true)
  t.same(cache.key('a'), { value: null, at: 3, tracked: true, used: true }, 'a key deleted later is negative again')
  t.equal(cache.size, 1)
  cache.set(cacheName.user('u'), null, 4, false)
  cache.set(cacheName.user('u'), 'user', 5, false)
  t.equal(cache.user('u')?.value, 'user')
  t.equal(cache.size, 2)
})

t.test('an invalidation or a flush drops negative entries too', async (t) => {
  const cache = new RecordCache(10, 10)
  cache.set(cacheName.key('a'), null, 0, true)
  cache.set(cacheName.role('gone'), null, 0, true)
  cache.delete(cacheName.key('a'))
  t.equal(cache.key('a'), undefined, 'the key was created: its negative entry is gone')
  t.equal(cache.role('gone')?.value, null)
  cache.clear()
  t.equal(cache.role('gone'), undefined)
  t.equal(cache.size, 0)
})

t.test('knownKey: a key id with a record, or whose record an invalidation or a flush dropped', async (t) => {
  const cache = new RecordCache(2, 10)
  cache.set(cacheName.key('a'), keyRecord(1), 0, true)
  cache.set(cacheName.key('b'), keyRecord(2), 0, true)
  cache.set(cacheName.key('gone'), null, 0, true)
  t.ok(cache.knownKey('a'))
  t.notOk(cache.knownKey('gone'), 'a negative entry is not a known key')
  t.notOk(cache.knownKey('never'))
  cache.delete(cacheName.key('a'))
  t.equal(cache.key('a'), undefined, 'the record is gone')
  t.ok(cache.knownKey('a'), 'its id is still known')
  cache.clear()
  t.equal(cache.key('b'), undefined)
  t.ok(cache.knownKey('b'), 'a flush keeps the ids known')
  for (const id of ['c', 'd', 'e']) {
    cache.set(cacheName.key(id), keyRecord(3), 0, true)
    cache.delete(cacheName.key(id))
  }
  t.notOk(cache.knownKey('a'), 'at most max_entries dropped ids are remembered, oldest dropped first')
  t.ok(cache.knownKey('e'))
})

t.test('knownKey: an evicted key id is still known', async (t) => {
  const cache = new RecordCache(2, 10)
  for (const id of ['a', 'b', 'c']) cache.set(cacheName.key(id), keyRecord(1), 0, true)
  t.equal(cache.counters.evictions, 1)
  t.equal(cache.key('a'), undefined, 'a was evicted')
  t.ok(cache.knownKey('a'))
})

t.test('imported-key lookups: by the SHA-256, bounded with the records, invalidated by their Redis name', async (t) => {
  const sha = 'a'.repeat(64)
  const cache = new RecordCache(3)
  cache.set(cacheName.imported(sha), 'KeyIdOfTheImport', 1, true)
  t.same(cache.imported(sha), { value: 'KeyIdOfTheImport', at: 1, tracked: true, used: true })
  t.equal(cache.key(sha), undefined, 'kinds do not mix')
  cache.set(cacheName.imported('b'.repeat(64)), null, 2, true)
  t.equal(cache.imported('b'.repeat(64))?.value, null, 'an unknown token is a negative entry')
  t.equal(cache.negativeSize, 1)
  for (let i = 0; i < 10; i++) {
    cache.set(cacheName.imported(String(i).repeat(64)), 'id' + i, 0, true)
    t.ok(cache.size - cache.negativeSize <= 3, 'lookups count toward max_entries')
  }
  t.ok(cache.counters.evictions > 0)

  const { prefixes, nameOf } = cacheNaming(redisKeys('keygate:'))
  t.ok(prefixes.includes('keygate:imported:'), 'push invalidation tracks the lookups')
  t.equal(nameOf(`keygate:imported:${sha}`), cacheName.imported(sha))
})

t.test('knownImport: a lookup held, or one an invalidation, an eviction or a flush dropped', async (t) => {
  const [a, b, c] = ['a', 'b', 'c'].map((ch) => ch.repeat(64)) as [string, string, string]
  const cache = new RecordCache(2)
  cache.set(cacheName.imported(a), 'idA', 0, true)
  cache.set(cacheName.imported(c), null, 0, true)
  t.ok(cache.knownImport(a))
  t.notOk(cache.knownImport(c), 'an unknown token is not known')
  cache.delete(cacheName.imported(a))
  t.equal(cache.imported(a), undefined)
  t.ok(cache.knownImport(a), 'still known after an invalidation')
  cache.set(cacheName.imported(b), 'idB', 0, true)
  cache.clear()
  t.ok(cache.knownImport(b), 'still known after a flush')
  t.notOk(cache.knownImport('d'.repeat(64)))
})

t.test('keyIds, for the refill after a flush: the key ids, and each imported lookup in place of its key id', async (t) => {
  const sha = 'e'.repeat(64)
  const cache = new RecordCache(10)
  cache.set(cacheName.key('native'), keyRecord(1), 0, true)
  cache.set(cacheName.key('viaImport'), keyRecord(2), 0, true)
  cache.set(cacheName.imported(sha), 'viaImport', 0, true)
  t.same(cache.keyIds().sort(), [cacheName.imported(sha), 'native'].sort(), 'the lookup\'s one read brings its key: not read twice')
  cache.delete(cacheName.imported(sha))
  t.same(cache.keyIds().sort(), ['native', 'viaImport'])
})
