// The key a principal signed in with bounds the keys it mints and the restrictions it sets (caller-key.ts).
import t from 'tap'
import { AddressList, Grants, INVALID } from '../../../../src/registry/records.js'
import type { AdminScope, CallerKey } from '../../../../src/admin/model/principal.js'
import {
  restrictionWithinCallerKey, rotationWithinCallerKey, withinCallerKey, type MintedBounds
} from '../../../../src/admin/policy/caller-key.js'
import { ADMIN, allowed, judge, refused, SELF, verdict } from '../../../helpers/admin-policy.js'

const DAY = 86_400_000
const NOW = Date.parse('2027-01-01T00:00:00Z')
const addresses = (...cidrs: string[]): AddressList => {
  const list = AddressList.parse(cidrs)
  if (list === INVALID) throw new Error('bad test list')
  return list
}
const key = (k: Partial<CallerKey>): CallerKey =>
  ({ id: 'own', addresses: undefined, scope: undefined, expiresAt: undefined, ...k })
const BOUND: AdminScope = { ...SELF, key: key({ addresses: addresses('10.0.0.0/8', '2001:db8::/32') }) }
const EXPIRING: AdminScope = { ...SELF, key: key({ expiresAt: NOW + 7 * DAY }) }
const BOUND_ADMIN: AdminScope = { scope: 'admin', key: key({ addresses: addresses('10.0.0.0/8') }) }
const SCOPED: AdminScope = { ...SELF, key: key({ scope: new Grants(['keygate:keys:self']) }) }
const UNBOUND_KEY: AdminScope = { ...SELF, key: key({}) }
const beyond = (outside: string, own = '10.0.0.0/8 2001:db8::/32'): RegExp =>
  new RegExp(`beyond the caller's own addresses \\(${own.replace(/[.*/]/g, '\\$&')}\\): ${outside.replace(/[.*/]/g, '\\$&')}$`)

t.test('withinCallerKey: a new key\'s addresses and expiry', async (t) => {
  const rows: Array<[string, AdminScope, MintedBounds, unknown]> = [
    ['no key (token, CLI, session): as asked', ADMIN, { allowedCidrs: ['0.0.0.0/0'] }, allowed({ allowedCidrs: ['0.0.0.0/0'] })],
    ['a key of its own, unbound and unexpiring: as asked', UNBOUND_KEY, {}, allowed({})],
    ['bound, none asked: its own', BOUND, {}, allowed({ allowedCidrs: ['10.0.0.0/8', '2001:db8::/32'] })],
    ['bound, narrower: as asked', BOUND, { allowedCidrs: ['10.1.0.0/16', '2001:db8:1::/48', '10.2.3.4'] },
      allowed({ allowedCidrs: ['10.1.0.0/16', '2001:db8:1::/48', '10.2.3.4'] })],
    ['bound, equal: as asked', BOUND, { allowedCidrs: ['10.0.0.0/8'] }, allowed({ allowedCidrs: ['10.0.0.0/8'] })],
    ['bound, wider', BOUND, { allowedCidrs: ['10.0.0.0/7'] }, refused({
      kind: 'forbidden', audit: 'denied', details: [{ field: 'allowed_cidrs', reason: beyond('10.0.0.0/7') }]
    })],
    ['bound, elsewhere', BOUND, { allowedCidrs: ['10.0.0.0/16', '192.168.0.0/16'] },
      refused({ kind: 'forbidden', details: [{ field: 'allowed_cidrs', reason: beyond('192.168.0.0/16') }] })],
    ['bound, another family', BOUND_ADMIN, { allowedCidrs: ['::ffff:10.0.0.1'] },
      refused({ kind: 'forbidden', details: [{ field: 'allowed_cidrs', reason: beyond('::ffff:10.0.0.1', '10.0.0.0/8') }] })],
    ['bound, a malformed entry: left to the shape check', BOUND, { allowedCidrs: ['10.0.0.0/40'] },
      allowed({ allowedCidrs: ['10.0.0.0/40'] })],
    ['an admin key bound too', BOUND_ADMIN, {}, allowed({ allowedCidrs: ['10.0.0.0/8'] })],
    ['expiring, none asked: its own expiry', EXPIRING, {}, allowed({ expiresInMs: 7 * DAY })],
    ['expiring, sooner: as asked', EXPIRING, { expiresInMs: DAY }, allowed({ expiresInMs: DAY })],
    ['expiring, later', EXPIRING, { expiresInMs: 8 * DAY }, refused({
      kind: 'invalid',
      audit: 'error',
      details: [{ field: 'expires_in', reason: 'a key expires no later than the key that creates it' }]
    })]
  ]
  for (const [what, s, input, expected] of rows) judge(t, verdict(() => withinCallerKey(s, input, NOW)), expected, what)
})

t.test('rotationWithinCallerKey: the new key of a rotation', async (t) => {
  const rows: Array<[string, AdminScope, MintedBounds, unknown]> = [
    ['no key: as it is', ADMIN, {}, allowed({})],
    ['bound, an unbound key', BOUND, {}, refused({
      kind: 'forbidden', audit: 'denied', message: 'a key bound to addresses rotates only keys bound within them'
    })],
    ['bound, a key within', BOUND, { allowedCidrs: ['10.9.0.0/16'] }, allowed({ allowedCidrs: ['10.9.0.0/16'] })],
    ['bound, a key wider', BOUND, { allowedCidrs: ['0.0.0.0/0'] }, refused({ kind: 'forbidden' })],
    ['expiring, an unexpiring key: capped', EXPIRING, {}, allowed({ expiresInMs: 7 * DAY })],
    ['expiring, a later key: capped', EXPIRING, { expiresInMs: 30 * DAY }, allowed({ expiresInMs: 7 * DAY })],
    ['expiring, a sooner key: as it is', EXPIRING, { expiresInMs: DAY }, allowed({ expiresInMs: DAY })]
  ]
  for (const [what, s, input, expected] of rows) {
    judge(t, verdict(() => rotationWithinCallerKey(s, input, NOW)), expected, what)
  }
})

t.test('restrictionWithinCallerKey: what a caller sets on a key', async (t) => {
  type Change = Parameters<typeof restrictionWithinCallerKey>[2]
  const rows: Array<[string, AdminScope, string, Change, unknown]> = [
    ['no key: anything', ADMIN, 'own', { allowedCidrs: null, scope: null }, allowed()],
    ['bound, removing its own addresses', BOUND, 'own', { allowedCidrs: null }, refused({
      kind: 'forbidden', audit: 'denied', details: [{ field: 'allowed_cidrs' }]
    })],
    ['bound, removing another key\'s addresses', BOUND, 'other', { allowedCidrs: null }, refused({ kind: 'forbidden' })],
    ['bound, widening its own', BOUND, 'own', { allowedCidrs: ['0.0.0.0/0'] }, refused({ kind: 'forbidden' })],
    ['bound, narrowing its own', BOUND, 'own', { allowedCidrs: ['10.1.0.0/16'] }, allowed()],
    ['bound, the scope alone', BOUND, 'own', { scope: null }, allowed()],
    ['scoped, removing its own scope', SCOPED, 'own', { scope: null }, refused({
      kind: 'forbidden', audit: 'denied', details: [{ field: 'scope' }]
    })],
    ['scoped, another key\'s scope', SCOPED, 'other', { scope: null }, allowed()],
    ['scoped, replacing its own scope (the scope rules keep it within its grants)', SCOPED, 'own',
      { scope: ['keygate:keys:self'] }, allowed()]
  ]
  for (const [what, s, id, change, expected] of rows) {
    judge(t, verdict(() => { restrictionWithinCallerKey(s, id, change) }), expected, what)
  }
})

t.test('AddressList.covers: a CIDR wholly within one entry of its family', async (t) => {
  const list = addresses('10.0.0.0/8', '192.168.1.1', '2001:db8::/32')
  const rows: Array<[string, boolean]> = [
    ['10.0.0.0/8', true], ['10.255.0.0/16', true], ['10.1.2.3', true], ['10.1.2.3/32', true],
    ['11.0.0.0/8', false], ['10.0.0.0/7', false], ['0.0.0.0/0', false],
    ['192.168.1.1', true], ['192.168.1.0/24', false],
    ['2001:db8:ffff::/48', true], ['2001:db8::/31', false], ['::/0', false], ['::ffff:10.0.0.1', false],
    ['10.0.0.0/33', false], ['not an address', false]
  ]
  for (const [cidr, covered] of rows) t.equal(list.covers(cidr), covered, cidr)
})
