// The key table holds cached key records column by column: every record reads back
// as it was stored, slots are reused, CLOCK eviction gives used entries a second chance.
import t from 'tap'
import { KeyTable } from '../../../src/cache/key-table.js'
import { newKeyId } from '../../../src/registry/key-format.js'
import { INVALID, restrictionOf, type KeyRecord, type KeyRestriction } from '../../../src/registry/records.js'

const digest = (n: number): string => Buffer.alloc(32, n).toString('latin1')
const personal = (n: number, over: Partial<KeyRecord> = {}): KeyRecord =>
  ({ type: 'personal', digest: digest(n), org: `org${n}`, user: `user${n}`, role: undefined, status: 'active', expiresAt: undefined, rateLimit: undefined, restriction: undefined, env: 'live', ...over })
const bot = (n: number, over: Partial<KeyRecord> = {}): KeyRecord =>
  ({ type: 'bot', digest: digest(n), org: `org${n}`, user: undefined, role: `role${n}`, status: 'active', expiresAt: undefined, rateLimit: undefined, restriction: undefined, env: 'live', ...over })

t.test('every kind of record reads back as stored', async (t) => {
  const rows: Array<[string, KeyRecord | typeof INVALID, number, boolean]> = [
    ['personal, active, never expires', personal(1), 10, true],
    ['personal, revoked', personal(2, { status: 'revoked' }), 11, false],
    ['personal, expiring', personal(3, { expiresAt: Date.UTC(2027, 0, 31) }), 12, true],
    ['BOT, active', bot(4), 13, true],
    ['BOT, revoked, expired at 0', bot(5, { status: 'revoked', expiresAt: 0 }), 14, false],
    ['a digest with every byte value', personal(6, { digest: Buffer.from(Array.from({ length: 32 }, (_, i) => i * 8 + 7)).toString('latin1') }), 15, true],
    ['a scoped, address-bound personal key', personal(7, { restriction: restrictionOf('users:read', '10.0.0.0/8') as KeyRestriction }), 17, true],
    ['a BOT key bound to addresses only', bot(8, { restriction: restrictionOf(null, '::1') as KeyRestriction }), 18, true],
    ['a test key', bot(9, { env: 'test' }), 19, true],
    ['an invalid record', INVALID, 16, true]
  ]
  const table = new KeyTable(100)
  rows.forEach(([, value, at, tracked], i) => table.set(`id${i}`, value, at, tracked))
  t.equal(table.size, rows.length)
  rows.forEach(([what, value, at, tracked], i) => {
    t.same(table.get(`id${i}`), { value, at, tracked, used: true }, what)
  })
  t.equal(table.get('absent'), undefined)
  t.notOk(table.has('absent'))
  t.same([...table.ids()].sort(), rows.map((_, i) => `id${i}`).sort())
})

t.test('set replaces every column of an entry, in place', async (t) => {
  const table = new KeyTable(10)
  table.set('k', bot(1, { status: 'revoked', expiresAt: 5 }), 1, true)
  table.set('k', personal(2), 2, false)
  t.same(table.get('k'), { value: personal(2), at: 2, tracked: false, used: true }, 'nothing of the BOT record is left')
  table.set('k', personal(3, { restriction: restrictionOf('users:read', null) as KeyRestriction }), 2, false)
  table.set('k', personal(3), 2, false)
  t.equal((table.get('k')?.value as KeyRecord).restriction, undefined, 'a restriction removed is gone')
  table.set('k', INVALID, 3, true)
  t.same(table.get('k'), { value: INVALID, at: 3, tracked: true, used: true })
  table.set('k', bot(3), 4, true)
  t.same(table.get('k')?.value, bot(3), 'from INVALID back to a record')
  t.equal(table.size, 1)
})

t.test('deleted slots are reused; clear empties the table', async (t) => {
  const table = new KeyTable(2)
  table.set('a', personal(1), 0, true)
  table.set('b', bot(2), 0, true)
  t.throws(() => table.set('c', personal(3), 0, true), /key table full/, 'a new id needs a free slot')
  table.delete('a')
  table.delete('absent')
  t.notOk(table.has('a'))
  table.set('c', personal(3), 0, true)
  t.same(table.get('c')?.value, personal(3), 'the freed slot holds the new record')
  t.same(table.get('b')?.value, bot(2), 'the other entry is untouched')
  table.clear()
  t.equal(table.size, 0)
  t.equal(table.get('b'), undefined)
  table.set('d', bot(4), 0, true)
  table.set('e', bot(5), 0, true)
  t.equal(table.size, 2, 'after clear the whole bound is free again')
})

t.test('the columns grow past their first capacity, keeping what they hold', async (t) => {
  const n = 3000
  const table = new KeyTable(n)
  for (let i = 0; i < n; i++) table.set(`k${i}`, i % 2 === 0 ? personal(i % 256, { expiresAt: i }) : bot(i % 256), i, i % 3 === 0)
  t.equal(table.size, n)
  let same = 0
  for (let i = 0; i < n; i++) {
    const expected = i % 2 === 0 ? personal(i % 256, { expiresAt: i }) : bot(i % 256)
    const entry = table.get(`k${i}`)
    if (entry !== undefined && entry.at === i && entry.tracked === (i % 3 === 0) && JSON.stringify(entry.value) === JSON.stringify(expected)) same++
  }
  t.equal(same, n, 'every entry reads back after the columns grew')
  t.throws(() => table.set('one more', personal(1), 0, true), /key table full/)
})

t.test('CLOCK: the hand drops the first unused entry it meets; a used one gets its chances', async (t) => {
  for (const shape of ['key ids', 'ids of another shape']) {
    const ids = shape === 'key ids' ? Array.from({ length: 5 }, newKeyId) : ['a', 'b', 'c', 'x', 'y']
    const [a, b, c, x, y] = ids as [string, string, string, string, string]
    const table = new KeyTable(10)
    for (const id of [a, b, c]) table.set(id, personal(1), 0, true)
    t.equal(table.evictOne(0), a, `${shape}: nothing used yet: the first slot`)
    table.get(b)
    t.equal(table.evictOne(1), c, `${shape}: b was used: passed over, unmarked`)
    t.equal(table.evictOne(1), b, `${shape}: the hand comes round to b, unmarked now`)
    t.equal(table.evictOne(1), undefined, `${shape}: empty`)
    t.equal(table.size, 0)

    for (const id of [x, y]) table.set(id, personal(1), 0, true)
    table.get(x)
    table.get(y)
    const first = table.evictOne(0)
    t.ok(first === x || first === y, `${shape}: no chances: the one at the hand even when used`)
    t.equal(table.evictOne(5), first === x ? y : x, `${shape}: every entry used: once the chances are spent one goes`)
    t.equal(table.size, 0)
    t.same([...table.ids()], [])
  }
})

t.test('5,000 key ids: each reads back its own record, and eviction and deletes keep the rest', async (t) => {
  const n = 5_000
  const ids = Array.from({ length: n }, newKeyId)
  const table = new KeyTable(n)
  ids.forEach((id, i) => table.set(id, personal(i % 256, { expiresAt: i }), i, true))
  t.throws(() => table.set(newKeyId(), personal(1), 0, true), /key table full/)
  const readsBack = (): number => ids.filter((id, i) => {
    const entry = table.get(id)
    return entry?.at === i && (entry.value as KeyRecord).expiresAt === i
  }).length
  t.equal(readsBack(), n)
  const evicted = new Set<string>()
  for (let i = 0; i < 500; i++) evicted.add(table.evictOne(0) as string)
  for (let i = 0; i < n; i += 7) { table.delete(ids[i] as string); evicted.add(ids[i] as string) }
  t.equal(table.size, n - evicted.size)
  t.equal(readsBack(), n - evicted.size, 'every id left reads back')
  t.equal([...evicted].filter((id) => table.has(id)).length, 0, 'no id gone is found')
  t.equal([...table.ids()].sort().join(), ids.filter((id) => !evicted.has(id)).sort().join(),
    'ids() lists exactly the ids held')
})

t.test('(org, owner) pairs: shared by keys, replaced with the record, released with the last key', async (t) => {
  const table = new KeyTable(10)
  const alice = (n: number, over: Partial<KeyRecord> = {}): KeyRecord => personal(n, { org: 'acme', user: 'alice', ...over })
  for (const id of ['a', 'b', 'c']) table.set(id, alice(1), 0, true)
  table.set('bot', bot(2, { org: 'acme', role: 'alice' }), 0, true)
  t.match(table.get('bot')?.value, { type: 'bot', org: 'acme', user: undefined, role: 'alice' }, 'a role named like a user stays a role')
  table.delete('a')
  table.delete('b')
  t.same(table.get('c')?.value, alice(1), 'the pair outlives the keys that left while one still names it')
  table.set('c', personal(3, { org: 'globex', user: 'carol' }), 1, true)
  t.same(table.get('c')?.value, personal(3, { org: 'globex', user: 'carol' }), 'a record naming another pair replaces it')
  table.set('d', alice(4), 0, true)
  t.same(table.get('d')?.value, alice(4), 'a released pair is taken again')
  table.set('e', alice(5, { rateLimit: { count: 1, periodMs: 1000, text: '1/1s' } }), 0, true)
  t.same((table.get('e')?.value as KeyRecord).rateLimit, { count: 1, periodMs: 1000, text: '1/1s' }, 'a key\'s own limit')
  table.set('e', alice(5), 0, true)
  t.equal((table.get('e')?.value as KeyRecord).rateLimit, undefined, 'and none once the record has none')
  table.set('d', INVALID, 0, true)
  t.equal(table.get('d')?.value, INVALID)
  table.clear()
  table.set('f', bot(6), 0, true)
  t.same(table.get('f')?.value, bot(6), 'after clear')
  for (let i = 0; i < 9; i++) table.set(`g${i}`, personal(i, { org: `o${i % 3}`, user: `u${i % 2}` }), 0, true)
  let right = 0
  for (let i = 0; i < 9; i++) if (JSON.stringify(table.get(`g${i}`)?.value) === JSON.stringify(personal(i, { org: `o${i % 3}`, user: `u${i % 2}` }))) right++
  t.equal(right, 9, 'every key reads its own pair')
})
