// Identities: who may put, delete and meter one, what its fields must be; `meta` never quoted.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import {
  checkIdentityId, checkKeyIdentity, checkMeta, decideDeleteIdentity, decidePutIdentity, visibleIdentity,
  type IdentityInput
} from '../../../../src/admin/policy/identities.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const snap = world({
  identities: {
    'cust-1': { org: 'acme', external_id: 'ext-1', rate_limit: '10/1s', meta: '{"tier":"gold"}' },
    'globex-cust': { org: 'globex', external_id: 'g-1' }
  },
  keys: {
    'cust-key-1': { type: 'bot', org: 'acme', role: 'reader', status: 'active', identity: 'cust-1' },
    'cust-key-2': { type: 'bot', org: 'acme', role: 'reader', status: 'revoked', identity: 'cust-1' }
  }
})
const needsOrgAdmin = refused({
  kind: 'forbidden', message: 'an identity needs keygate:org:admin', needs: 'keygate:org:admin', audit: 'denied'
})
const hidden = (id: string): unknown =>
  refused({ kind: 'not_found', message: `identity "${id}" does not exist`, audit: 'denied' })

t.test('decidePutIdentity: created in the caller\'s org, or changed where it is; each field checked', async (t) => {
  const rows: Array<[string, AdminScope, string, IdentityInput, string | null, unknown]> = [
    ['an admin creates one in an org', ADMIN, 'cust-2', { org: 'acme', externalId: 'ext-2' }, null, allowed({
      org: 'acme',
      created: true,
      fields: { org: 'acme', external_id: 'ext-2' },
      removed: [],
      formerExternalId: undefined,
      detail: { org: 'acme', external_id: 'ext-2' }
    })],
    ['an org admin creates one in its own org', ORG, 'cust-3', { externalId: 'ext-3' }, null, allowed({
      org: 'acme', created: true, fields: { org: 'acme' }
    })],
    ['with its allowance and meta', ADMIN, 'cust-4', {
      org: 'acme', externalId: 'ext-4', quota: '100/day', credits: 5, rateLimit: '2/1s', meta: { plan: 'pro' }
    }, null, allowed({
      fields: { quota: '100/day', credits: '5', rate_limit: '2/1s', meta: '{"plan":"pro"}' },
      detail: { quota: '100/day', credits: '5', rate_limit: '2/1s', meta: '14 bytes' }
    })],
    ['an admin names no org', ADMIN, 'cust-2', { externalId: 'ext-2' }, null, refused({
      kind: 'invalid', message: 'a new identity needs an org'
    })],
    ['no external id', ADMIN, 'cust-2', { org: 'acme' }, null, refused({
      kind: 'invalid', message: 'a new identity needs an external id'
    })],
    ['a bad org name', ADMIN, 'cust-2', { org: 'bad org', externalId: 'x' }, null, refused({
      kind: 'invalid', message: /invalid org "bad org"/
    })],
    ['an org admin, another org', ORG, 'cust-2', { org: 'globex', externalId: 'x' }, null, refused({
      kind: 'forbidden', message: 'identities are managed in the caller\'s own org (acme) only', audit: 'denied'
    })],
    ['a key\'s holder', SELF, 'cust-2', { externalId: 'x' }, null, needsOrgAdmin],
    ['a bad id', ADMIN, 'bad id', { org: 'acme', externalId: 'x' }, null, refused({
      kind: 'invalid', message: /^invalid identity id "bad id"/
    })],
    ['an identity never moves', ADMIN, 'cust-1', { org: 'globex' }, null, refused({
      kind: 'invalid', message: 'identity "cust-1" is in org "acme": an identity never moves to another org'
    })],
    ['an org admin, another org\'s identity', ORG, 'globex-cust', { quota: '1/day' }, null, hidden('globex-cust')],
    ['a limit removed, a quota set', ADMIN, 'cust-1', { rateLimit: null, quota: '100/day' }, null, allowed({
      org: 'acme',
      created: false,
      fields: { quota: '100/day' },
      removed: ['rate_limit'],
      detail: { quota: '100/day', rate_limit: '' }
    })],
    ['removing what it does not have', ADMIN, 'cust-1', { quota: null }, null, allowed({ removed: [], detail: {} })],
    ['meta removed', ORG, 'cust-1', { meta: null }, null, allowed({ removed: ['meta'], detail: { meta: '' } })],
    ['every bad field at once', ADMIN, 'cust-1', {
      externalId: 'has space', rateLimit: 'fast', quota: '0/day'
    }, null, refused({
      kind: 'invalid',
      details: [{ field: 'external_id' }, { field: 'rate_limit' }, { field: 'quota' }]
    })],
    ['credits set again', ADMIN, 'cust-1', { credits: 5 }, null, refused({
      kind: 'invalid', details: [{ field: 'credits', reason: 'credits are added with the meter call, not set again' }]
    })],
    ['negative credits', ADMIN, 'cust-2', { org: 'acme', externalId: 'x', credits: -1 }, null, refused({
      kind: 'invalid', details: [{ field: 'credits' }]
    })],
    ['an external id another identity holds', ADMIN, 'cust-2', { org: 'acme', externalId: 'ext-1' }, 'cust-1', refused({
      kind: 'conflict', message: 'external id "ext-1" already names identity "cust-1" in org acme'
    })],
    ['its own external id again', ADMIN, 'cust-1', { externalId: 'ext-1' }, 'cust-1', allowed({
      fields: {}, removed: [], formerExternalId: undefined
    })],
    ['a new external id', ADMIN, 'cust-1', { externalId: 'ext-9' }, null, allowed({
      fields: { external_id: 'ext-9' }, formerExternalId: 'ext-1'
    })]
  ]
  for (const [what, s, id, input, holder, expected] of rows) {
    judge(t, verdict(() => decidePutIdentity(s, snap, id, input, holder)), expected, what)
  }
})

t.test('decidePutIdentity: nothing of meta is quoted in a refusal', async (t) => {
  const secret = 'x'.repeat(1100)
  const v = verdict(() => decidePutIdentity(ADMIN, snap, 'cust-1', { meta: { secret } }, null))
  judge(t, v, refused({
    kind: 'invalid', message: /^meta is \d+ bytes of JSON, more than 1024$/, details: [{ field: 'meta' }]
  }), 'too long')
  t.notOk(JSON.stringify(v).includes('xxxx'), 'the value is not in the refusal')
  const array = verdict(() => checkMeta(['a']))
  judge(t, array, refused({
    kind: 'invalid', message: 'meta must be a JSON object', details: [{ field: 'meta' }]
  }), 'an array')
  t.equal(checkMeta({ a: 1 }), '{"a":1}', 'a good one, as stored')
})

t.test('decideDeleteIdentity: refused while active keys name it, unless forced, which revokes them', async (t) => {
  const keys = ['cust-key-1', 'cust-key-2']
  const rows: Array<[string, AdminScope, string, readonly string[], boolean, unknown]> = [
    ['with an active key', ADMIN, 'cust-1', keys, false, refused({
      kind: 'conflict',
      message: 'identity "cust-1" has 1 active key(s): revoke them first, or force (which revokes them)',
      details: [{ field: 'keys', reason: '1 active key(s) name the identity' }]
    })],
    ['forced: the active key revoked', ADMIN, 'cust-1', keys, true, allowed({
      org: 'acme', externalId: 'ext-1', revoke: ['cust-key-1']
    })],
    ['no key names it', ORG, 'cust-1', ['cust-key-2'], false, allowed({ org: 'acme', revoke: [] })],
    ['an org admin, another org\'s', ORG, 'globex-cust', [], false, hidden('globex-cust')],
    ['a key\'s holder', SELF, 'cust-1', [], false, needsOrgAdmin],
    ['missing', ADMIN, 'nope', [], false, refused({
      kind: 'not_found', message: 'identity "nope" does not exist', audit: 'error'
    })]
  ]
  for (const [what, s, id, keyIds, force, expected] of rows) {
    judge(t, verdict(() => decideDeleteIdentity(s, snap, id, keyIds, force)), expected, what)
  }
})

t.test('visibleIdentity, checkKeyIdentity, checkIdentityId', async (t) => {
  const record = (id: string): Record<string, string> | undefined => snap.identities.get(id)
  judge(t, verdict(() => visibleIdentity(ORG, 'cust-1', record('cust-1'))), allowed({ org: 'acme' }), 'its own org\'s')
  const globex = record('globex-cust')
  judge(t, verdict(() => visibleIdentity(ADMIN, 'globex-cust', globex)), allowed({ org: 'globex' }), 'an admin')
  judge(t, verdict(() => checkKeyIdentity(snap, 'cust-1', 'acme')), allowed(), 'a BOT key names an identity of its org')
  judge(t, verdict(() => checkKeyIdentity(snap, 'cust-1', 'globex')), refused({
    kind: 'invalid', message: 'identity "cust-1" does not exist in org globex', details: [{ field: 'identity' }]
  }), 'of another org')
  judge(t, verdict(() => checkKeyIdentity(snap, 'nope', 'acme')), refused({
    kind: 'invalid', details: [{ field: 'identity' }]
  }), 'missing')
  judge(t, verdict(() => { checkIdentityId(`a${'b'.repeat(127)}`) }), allowed(), '128 characters')
  judge(t, verdict(() => { checkIdentityId(`a${'b'.repeat(128)}`) }), refused({ kind: 'invalid' }), '129 characters')
  judge(t, verdict(() => { checkIdentityId('-lead') }), refused({ kind: 'invalid' }), 'a leading dash')
})
