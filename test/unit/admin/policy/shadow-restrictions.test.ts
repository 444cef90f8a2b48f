// Shadow restrictions: recorded, promoted and dropped, each decided as a live restriction is.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import type { KeyRestrictionChange } from '../../../../src/admin/policy/key-changes.js'
import {
  decidePromotion, decideShadowDrop, decideShadowRestriction, SHADOW_FIELDS
} from '../../../../src/admin/policy/shadow-restrictions.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const NOW = Date.parse('2027-01-01T00:00:00Z')
const SINCE = '2026-12-01T00:00:00Z'
const shadow = (scope: string, cidrs: string): Record<string, string> =>
  ({ shadow_scope: scope, shadow_allowed_cidrs: cidrs, shadow_since: SINCE })
const reader = { type: 'bot', org: 'acme', role: 'reader', status: 'active' }
const snap = world({
  keys: {
    'narrow-key': { ...reader, scope: 'users:read', allowed_cidrs: '10.0.0.0/8' },
    'shadowed-key': { ...reader, scope: 'users:read', ...shadow('users:read', '10.0.0.0/8') },
    'same-shadow': { ...reader, scope: 'users:read', ...shadow('users:read', '') },
    'empty-shadow': { ...reader, scope: 'users:read', ...shadow('', '') },
    'wide-shadow': { type: 'bot', org: 'acme', role: 'reader', status: 'active', ...shadow('orders:read', '') },
    'boss-shadowed': { type: 'bot', org: 'acme', role: 'boss', status: 'active', ...shadow('keygate:admin', '') },
    'globex-shadowed': { type: 'bot', org: 'globex', role: 'reader', status: 'active', ...shadow('users:read', '') },
    'sam-shadowed': { type: 'personal', org: 'acme', user: 'sam', status: 'active', ...shadow('', '10.0.0.0/8') },
    'alice-shadowed': { type: 'personal', org: 'acme', user: 'alice', status: 'active', ...shadow('', '10.0.0.0/8') }
  }
})
const dropped = { shadow_scope: null, shadow_allowed_cidrs: null, shadow_since: null }
const missing = (id: string): unknown => refused({ kind: 'not_found', message: `key "${id}" does not exist` })
/** outside the caller's scope: 404, audited as a refusal by scope */
const hidden = (id: string, why: string): unknown =>
  refused({ kind: 'not_found', message: `key "${id}" ${why}`, audit: 'denied' })
const OTHER_ORG = 'is not in org acme'
const OTHER_USER = 'is not a key of user sam'
const boss = refused({ kind: 'forbidden', message: /key "boss-shadowed" acts with role "boss"/, audit: 'denied' })
const none = (id: string): unknown => refused({
  kind: 'conflict', message: `key "${id}" has no shadow restriction; record one with --shadow first`
})

t.test('decideShadowRestriction: what the change would make live; a part not given, the live one\'s', async (t) => {
  const since = '2027-01-01T00:00:00Z'
  const rows: Array<[string, AdminScope, string, KeyRestrictionChange, unknown]> = [
    ['a scope on an unrestricted key', ADMIN, 'alice-key', { scope: ['users:read'] }, allowed({
      org: 'acme',
      fields: { shadow_scope: 'users:read', shadow_allowed_cidrs: '', shadow_since: since },
      detail: { shadow: 'recorded', scope: 'users:read', allowed_cidrs: '' }
    })],
    ['addresses: the live scope kept', ADMIN, 'narrow-key', { allowedCidrs: ['192.168.0.0/16'] }, allowed({
      fields: { shadow_scope: 'users:read', shadow_allowed_cidrs: '192.168.0.0/16', shadow_since: since }
    })],
    ['the scope removed: the whole role tried', ADMIN, 'narrow-key', { scope: null }, allowed({
      fields: { shadow_scope: '', shadow_allowed_cidrs: '10.0.0.0/8' }
    })],
    ['nothing given: the live restriction itself', ADMIN, 'narrow-key', {}, allowed({
      fields: { shadow_scope: 'users:read', shadow_allowed_cidrs: '10.0.0.0/8', shadow_since: since },
      detail: { shadow: 'recorded', scope: 'users:read', allowed_cidrs: '10.0.0.0/8' }
    })],
    ['a bad address', ADMIN, 'narrow-key', { allowedCidrs: ['nope'] }, refused({
      kind: 'invalid', details: [{ field: 'allowed_cidrs' }]
    })],
    ['a missing key', ADMIN, 'ghost', { scope: ['users:read'] }, missing('ghost')],
    ['an org admin, its org\'s key', ORG, 'alice-key', { allowedCidrs: ['10.0.0.0/8'] }, allowed({ org: 'acme' })],
    ['an org admin, a scope beyond its grants', ORG, 'alice-key', { scope: ['orders:read'] }, refused({
      kind: 'forbidden', details: [{ field: 'scope' }], audit: 'denied'
    })],
    ['an org admin, a key beyond its grants', ORG, 'boss-shadowed', { allowedCidrs: ['10.0.0.0/8'] }, boss],
    ['an org admin, another org\'s key', ORG, 'globex-bot', { allowedCidrs: ['10.0.0.0/8'] },
      hidden('globex-bot', OTHER_ORG)],
    ['a key\'s holder, its own key', SELF, 'sam-key', { allowedCidrs: ['10.0.0.0/8'] }, allowed({
      fields: { shadow_scope: '', shadow_allowed_cidrs: '10.0.0.0/8' }
    })],
    ['a key\'s holder, another user\'s key', SELF, 'alice-key', { allowedCidrs: ['10.0.0.0/8'] },
      hidden('alice-key', OTHER_USER)]
  ]
  for (const [what, s, id, change, expected] of rows) {
    judge(t, verdict(() => decideShadowRestriction(s, snap, id, change, NOW)), expected, what)
  }
})

t.test('decidePromotion: the shadow restriction becomes the live one, as this caller may set it', async (t) => {
  const rows: Array<[string, AdminScope, string, unknown]> = [
    ['addresses added to the live scope', ADMIN, 'shadowed-key', allowed({
      org: 'acme',
      fields: { ...dropped, scope: 'users:read', allowed_cidrs: '10.0.0.0/8' },
      detail: {
        shadow: 'promoted',
        scope: 'users:read',
        allowed_cidrs: '10.0.0.0/8',
        from_scope: 'users:read',
        from_allowed_cidrs: ''
      }
    })],
    ['an empty shadow: the live scope removed', ADMIN, 'empty-shadow', allowed({
      fields: { ...dropped, scope: null, allowed_cidrs: null },
      detail: { shadow: 'promoted', scope: '', from_scope: 'users:read' }
    })],
    ['a scope the admin may give', ADMIN, 'wide-shadow', allowed({ fields: { ...dropped, scope: 'orders:read' } })],
    ['no shadow restriction', ADMIN, 'narrow-key', none('narrow-key')],
    ['a missing key', ADMIN, 'ghost', missing('ghost')],
    ['an org admin, a shadow scope beyond its grants', ORG, 'wide-shadow', refused({
      kind: 'forbidden', details: [{ field: 'scope' }], audit: 'denied'
    })],
    ['an org admin, a key beyond its grants', ORG, 'boss-shadowed', boss],
    ['an org admin, another org\'s key', ORG, 'globex-shadowed', hidden('globex-shadowed', OTHER_ORG)],
    ['an org admin, its org\'s key', ORG, 'shadowed-key', allowed({ org: 'acme' })],
    ['a key\'s holder, its own key', SELF, 'sam-shadowed', allowed({
      fields: { ...dropped, scope: null, allowed_cidrs: '10.0.0.0/8' }
    })],
    ['a key\'s holder, another user\'s key', SELF, 'alice-shadowed', hidden('alice-shadowed', OTHER_USER)]
  ]
  for (const [what, s, id, expected] of rows) judge(t, verdict(() => decidePromotion(s, snap, id)), expected, what)
})

t.test('decidePromotion: a shadow the same as the live restriction only drops the shadow fields', async (t) => {
  const d = decidePromotion(ADMIN, snap, 'same-shadow')
  t.same(d, { org: 'acme', fields: dropped, detail: { shadow: 'promoted' } })
  t.same(Object.keys(d.fields), [...SHADOW_FIELDS])
})

t.test('decideShadowDrop: the shadow fields go, the live restriction stays; who may is who may restrict', async (t) => {
  const rows: Array<[string, AdminScope, string, unknown]> = [
    ['an admin', ADMIN, 'shadowed-key', allowed({ org: 'acme', fields: dropped, detail: { shadow: 'dropped' } })],
    ['an org admin, its org\'s key', ORG, 'wide-shadow', allowed({ org: 'acme', fields: dropped })],
    ['a key\'s holder, its own key', SELF, 'sam-shadowed', allowed({ fields: dropped })],
    ['no shadow restriction', ADMIN, 'narrow-key', none('narrow-key')],
    ['a missing key', ADMIN, 'ghost', missing('ghost')],
    ['an org admin, a key beyond its grants', ORG, 'boss-shadowed', boss],
    ['an org admin, another org\'s key', ORG, 'globex-shadowed', hidden('globex-shadowed', OTHER_ORG)],
    ['a key\'s holder, another user\'s key', SELF, 'alice-shadowed', hidden('alice-shadowed', OTHER_USER)]
  ]
  for (const [what, s, id, expected] of rows) judge(t, verdict(() => decideShadowDrop(s, snap, id)), expected, what)
})
