// The key table's id index: real key ids (key-format.ts) found, deleted and found again
// through growth and deletes, checked at every step against a Map; ids of any other
// shape held too.
import t from 'tap'
import { IdIndex } from '../../../src/cache/id-index.js'
import { generateKey, newKeyId } from '../../../src/registry/key-format.js'

t.test('real key ids: adds, lookups, deletes and re-adds agree with a Map through every resize', async (t) => {
  const index = new IdIndex()
  const model = new Map<string, number>()
  const ids = Array.from({ length: 20_000 }, (_, i) => i % 2 === 0 ? newKeyId() : generateKey('kg_').id)
  let capacity = 0
  const free: number[] = []
  let next = 0
  const add = (id: string): void => {
    const slot = free.pop() ?? next++
    if (slot >= capacity) capacity = Math.max(1024, capacity * 2)
    index.add(id, slot, capacity)
    model.set(id, slot)
  }
  let deletedWrong = 0
  const remove = (id: string): void => {
    if (index.delete(id) !== (model.get(id) ?? -1)) deletedWrong++
    const slot = model.get(id)
    if (slot !== undefined) free.push(slot)
    model.delete(id)
  }
  const agree = (what: string): void => {
    let wrong = 0
    for (const id of ids) if (index.get(id) !== (model.get(id) ?? -1)) wrong++
    t.equal(wrong, 0, `${what}: every id's slot as the Map has it`)
    t.equal(index.size, model.size, `${what}: size`)
    t.equal(deletedWrong, 0, `${what}: every delete returned the id's slot, or -1`)
    let misnamed = 0
    for (const [id, slot] of model) if (index.idAt(slot) !== id) misnamed++
    t.equal(misnamed, 0, `${what}: every slot names its id`)
  }
  for (const id of ids.slice(0, 15_000)) add(id)
  agree('after 15,000 adds (the table grew from 2,048 buckets to 32,768)')
  // deletes in runs and scattered, so probe runs get holes that the backward shift must close
  for (let i = 0; i < 15_000; i += 3) remove(ids[i] as string)
  for (let i = 1000; i < 3000; i++) remove(ids[i] as string)
  remove(newKeyId())
  agree('after deleting a third, then a run of 2,000')
  for (const id of ids.slice(1000, 20_000)) if (!model.has(id)) add(id)
  agree('after re-adding them and 5,000 more, in reused slots')
  for (const id of ids) remove(id)
  agree('after deleting every id')
})

t.test('ids of another shape are held too', async (t) => {
  const index = new IdIndex()
  const odd = ['short', 'a'.repeat(17), 'é'.repeat(16), 'abcdefghijklmno€', '']
  odd.forEach((id, slot) => index.add(id, slot, 8))
  const native = newKeyId()
  index.add(native, 7, 8)
  t.same(odd.map((id) => index.get(id)), [0, 1, 2, 3, 4])
  t.same(odd.map((_, slot) => index.idAt(slot)), odd)
  t.equal(index.get(native), 7)
  t.equal(index.idAt(7), native)
  t.equal(index.size, 6)
  t.equal(index.get(native.slice(0, 15) + (native.endsWith('a') ? 'b' : 'a')), -1, 'one character off is another id')
  t.equal(index.delete('é'.repeat(16)), 2)
  t.equal(index.get('é'.repeat(16)), -1)
  t.equal(index.delete('é'.repeat(16)), -1)
  index.clear()
  t.equal(index.size, 0)
  t.equal(index.get(native), -1)
  t.equal(index.get('short'), -1)
})
