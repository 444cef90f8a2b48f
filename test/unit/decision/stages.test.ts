// The stages are one list in code (src/decision/stages.ts); docs/request-flow.md
// ("How a request flows") draws it and lists it, and must say the same: the names in order, each
// stage's answer under its name, and the files each item names.
import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { STAGES } from '../../../src/decision/stages.js'
import { DECISION_STAGES } from '../../../src/decision/stages/index.js'

const root = new URL('../../../', import.meta.url)
const section = readFileSync(new URL('docs/request-flow.md', root), 'utf8')

t.test('the diagram draws the stages in order, each answer under its name', async (t) => {
  const lines = section.split('\n')
  const at = lines.findIndex((l) => l.startsWith('client ─▶ '))
  t.ok(at > 0, 'the diagram is there')
  const drawn = lines[at] as string
  const answers = lines[at + 1] as string
  t.same(drawn.split(' ─▶ ').slice(1), STAGES.map((s) => s.name))
  t.same(answers.trim().split(/ {2,}/), STAGES.map((s) => s.answer).filter((a) => a !== ''), 'the answers, in order')
  let from = 0
  for (const s of STAGES) {
    const col = drawn.indexOf(` ${s.name}`, from) + 1
    from = col + s.name.length
    if (s.answer === '') continue
    t.ok(answers.indexOf(s.answer, col - 4) - col <= 4, `${s.name}: ${s.answer}, under its name`)
  }
})

t.test('the numbered list names each stage and its files, in order', async (t) => {
  const items = [...section.matchAll(/^(\d+)\. \*\*([^*]+)\*\* \(([^)]*)\)/gm)]
  t.equal(items.length, STAGES.length)
  STAGES.forEach((s, i) => {
    const item = items[i]
    t.equal(item?.[1], String(i + 1))
    t.equal(item?.[2]?.toLowerCase(), s.name)
    t.same(item?.[3]?.split(', ').map((f) => f.replaceAll('`', '')), s.files, `${s.name}: its files`)
  })
})

t.test('every file a stage names is there', async (t) => {
  for (const s of STAGES) {
    for (const f of s.files) t.ok(existsSync(new URL(f, root)), f)
  }
})

t.test('the decision is the stages from receive to quota; authentication, credential to authenticate', async (t) => {
  t.same(STAGES.filter((s) => s.decision).map((s) => s.name), ['receive', 'route prefix', 'credential', 'key format', 'records', 'authenticate', 'environment', 'address', 'authorize', 'rate limits', 'quota'])
  t.same(STAGES.filter((s) => s.authentication).map((s) => s.name), ['credential', 'key format', 'records', 'authenticate'])
})

t.test('the stages after authentication are the list the decision runs, in its order', async (t) => {
  const names = STAGES.map((s) => s.name)
  const after = names.slice(names.indexOf('authenticate') + 1, names.indexOf('body'))
  t.same(after, DECISION_STAGES.map((s) => s.name))
})
