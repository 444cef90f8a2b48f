import t from 'tap'
import { NegativeStore } from '../../../src/cache/negative-store.js'

t.test('holds at most its bound, evicting the oldest entry among its own', async (t) => {
  const store = new NegativeStore(3, 8)
  t.equal(store.set('k:a', 1, true), false)
  t.equal(store.set('k:b', 2, true), false)
  t.equal(store.set('k:c', 3, false), false)
  t.equal(store.set('k:d', 4, false), true, 'the fourth evicts one')
  t.equal(store.size, 3)
  t.equal(store.get('k:a'), undefined, 'the oldest went')
  t.same(store.get('k:d'), { value: null, at: 4, tracked: false, used: true })
})

t.test('replacing an entry refreshes it and never evicts', async (t) => {
  const store = new NegativeStore(2, 8)
  store.set('k:a', 1, false)
  store.set('k:b', 1, false)
  t.equal(store.set('k:a', 9, true), false)
  t.equal(store.size, 2)
  t.same(store.get('k:a'), { value: null, at: 9, tracked: true, used: true })
})

t.test('CLOCK: an entry looked up since the scan passed it survives a flood of new ones', async (t) => {
  const store = new NegativeStore(4, 8)
  store.set('k:retried', 0, true)
  for (let i = 0; i < 100; i++) {
    t.ok(store.get('k:retried'), `still held before flood entry ${i}`)
    store.set(`k:flood${i}`, 0, true)
  }
  t.equal(store.size, 4)
})

t.test('the second chances are bounded: when every entry is used, one goes anyway', async (t) => {
  const store = new NegativeStore(3, 1)
  for (const n of ['a', 'b', 'c']) store.set(`k:${n}`, 0, true)
  for (const n of ['a', 'b', 'c']) store.get(`k:${n}`)
  t.equal(store.set('k:d', 0, true), true)
  t.equal(store.size, 3)
  t.ok(store.get('k:d'))
})

t.test('delete and clear', async (t) => {
  const store = new NegativeStore(3, 8)
  store.set('k:a', 0, true)
  store.set('u:b', 0, true)
  store.delete('k:a')
  t.equal(store.get('k:a'), undefined)
  t.ok(store.get('u:b'))
  store.clear()
  t.equal(store.size, 0)
})
