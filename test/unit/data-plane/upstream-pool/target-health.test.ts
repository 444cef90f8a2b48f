/**
 * A target's health (src/data-plane/upstream-pool/target-health.ts): the thresholds
 * bound flapping; passive ejection; the return after the ejection without checks.
 */
import t from 'tap'
import {
  TargetHealth, type HealthChange, type HealthRules
} from '../../../../src/data-plane/upstream-pool/target-health.js'

function health (rules: Partial<HealthRules> = {}): { h: TargetHealth, changes: Array<[boolean, HealthChange]> } {
  const changes: Array<[boolean, HealthChange]> = []
  const all: HealthRules = { unhealthyAfter: 2, healthyAfter: 3, passiveFailures: 3, ejectionMs: undefined, ...rules }
  const h = new TargetHealth(all, (up, why) => { changes.push([up, why]) })
  t.teardown(() => { h.stop() })
  return { h, changes }
}

/** checks as a string: + passed, - failed; the state after each */
const TABLE: Array<[string, string]> = [
  ['+-+-+-+-+-', 'uuuuuuuuuu'],
  ['--', 'ud'],
  ['--+-+++', 'udddddu'],
  ['---++', 'udddd'],
  ['--+++-', 'uddduu'],
  ['--+++--', 'uddduud']
]

for (const [checks, states] of TABLE) {
  t.test(`checks ${checks}`, async (t) => {
    const { h } = health()
    const seen = [...checks].map((c) => { h.checked(c === '+'); return h.up ? 'u' : 'd' }).join('')
    t.equal(seen, states)
  })
}

t.test('alternating results never change the state', async (t) => {
  const { h, changes } = health()
  for (let i = 0; i < 100; i++) h.checked(i % 2 === 0)
  t.same(changes, [])
})

t.test('passive: consecutive connection failures eject; a response in between resets the count', async (t) => {
  const { h, changes } = health()
  h.connectionFailed(); h.connectionFailed(); h.responded(); h.connectionFailed(); h.connectionFailed()
  t.equal(h.up, true)
  h.connectionFailed()
  t.equal(h.up, false)
  t.same(changes, [[false, 'ejected']])
  h.checked(true); h.checked(true)
  t.equal(h.up, false, 'back only after healthy_after passed checks')
  h.checked(true)
  t.same(changes, [[false, 'ejected'], [true, 'check_passed']])
})

t.test('passive without checks: back after the ejection', async (t) => {
  const { h, changes } = health({ passiveFailures: 1, ejectionMs: 20 })
  h.connectionFailed()
  t.equal(h.up, false)
  await new Promise((resolve) => setTimeout(resolve, 60))
  t.equal(h.up, true)
  t.same(changes, [[false, 'ejected'], [true, 'ejection_over']])
})
