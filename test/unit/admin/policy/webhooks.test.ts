// Webhook endpoints: who adds, sees and lists them, and what an endpoint must be.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import {
  decideAddWebhook, visibleWebhook, visibleWebhooks, type WebhookInput
} from '../../../../src/admin/policy/webhooks.js'
import { ADMIN, allowed, judge, ORG, ORG_BOT, refused, SELF, verdict } from '../../../helpers/admin-policy.js'

const needsOrgAdmin = refused({
  kind: 'forbidden', message: 'managing webhooks needs keygate:org:admin', needs: 'keygate:org:admin', audit: 'denied'
})
const hook = (o: Partial<WebhookInput> = {}): WebhookInput =>
  ({ url: 'https://hooks.example.com/k', events: ['key.created'], ...o })

t.test('decideAddWebhook: the endpoint\'s org as the caller may add it, its events and target checked', async (t) => {
  const rows: Array<[string, AdminScope, WebhookInput, string | undefined, unknown]> = [
    ['an admin, every org\'s events', ADMIN, hook(), undefined, allowed({ org: undefined, events: ['key.created'] })],
    ['an admin, one org\'s', ADMIN, hook({ org: 'globex' }), undefined, allowed({
      org: 'globex', events: ['key.created']
    })],
    ['an org admin: its own org, unasked', ORG, hook(), undefined, allowed({ org: 'acme', events: ['key.created'] })],
    ['an org admin naming its own org', ORG, hook({ org: 'acme' }), undefined, allowed({ org: 'acme' })],
    ['an org admin\'s BOT key', ORG_BOT, hook(), undefined, allowed({ org: 'acme' })],
    ['an org admin, another org', ORG, hook({ org: 'globex' }), undefined, refused({
      kind: 'forbidden', message: 'an org admin adds webhooks for its own org "acme" only', audit: 'denied'
    })],
    ['a key\'s holder', SELF, hook(), undefined, needsOrgAdmin],
    ['events named twice, kept once in order', ADMIN, hook({ events: ['key.revoked', 'key.created', 'key.revoked'] }),
      undefined, allowed({ org: undefined, events: ['key.revoked', 'key.created'] })],
    ['no event', ADMIN, hook({ events: [] }), undefined, refused({
      kind: 'invalid', message: 'a webhook needs at least one event', audit: 'error'
    })],
    ['an unknown event, the known ones listed', ADMIN, hook({ events: ['key.created', 'key.eaten', 'webhook.test'] }),
      undefined, refused({
        kind: 'invalid', message: /^unknown event key\.eaten, webhook\.test; known: key\.created, /
      })],
    ['a refused target', ADMIN, hook({ url: 'http://10.0.0.1/' }), 'a private address', refused({
      kind: 'invalid',
      message: 'the webhook URL is refused: a private address (webhooks.allow_private_targets)',
      audit: 'error'
    })],
    ['the scope first: a key\'s holder with a refused target', SELF, hook(), 'a private address', needsOrgAdmin]
  ]
  for (const [what, scope, input, target, expected] of rows) {
    judge(t, verdict(() => decideAddWebhook(scope, input, target)), expected, what)
  }
})

const ENDPOINTS = [
  { id: 'all', org: undefined },
  { id: 'acme-1', org: 'acme' },
  { id: 'globex-1', org: 'globex' },
  { id: 'acme-2', org: 'acme' }
]

t.test('visibleWebhook: another org\'s endpoint is 404, exactly as a missing one', async (t) => {
  const missing = (id: string): unknown => refused({ kind: 'not_found', message: `webhook "${id}" does not exist` })
  const rows: Array<[string, AdminScope, string, unknown]> = [
    ['an admin, an org\'s', ADMIN, 'globex-1', allowed({ id: 'globex-1', org: 'globex' })],
    ['an admin, every org\'s', ADMIN, 'all', allowed({ id: 'all' })],
    ['an org admin, its own org\'s', ORG, 'acme-2', allowed({ id: 'acme-2', org: 'acme' })],
    ['an org admin, another org\'s', ORG, 'globex-1', missing('globex-1')],
    ['an org admin, every org\'s', ORG, 'all', missing('all')],
    ['missing', ADMIN, 'nope', missing('nope')],
    ['missing, to an org admin', ORG, 'nope', missing('nope')],
    ['a key\'s holder, its own org\'s', SELF, 'acme-1', needsOrgAdmin]
  ]
  for (const [what, scope, id, expected] of rows) {
    judge(t, verdict(() => visibleWebhook(scope, id, ENDPOINTS.find((e) => e.id === id))), expected, what)
  }
})

t.test('visibleWebhooks: an admin every endpoint, an org admin its own org\'s', async (t) => {
  const rows: Array<[string, AdminScope, unknown]> = [
    ['an admin', ADMIN, allowed(ENDPOINTS)],
    ['an org admin', ORG, allowed([{ id: 'acme-1' }, { id: 'acme-2' }])],
    ['a key\'s holder', SELF, needsOrgAdmin]
  ]
  for (const [what, scope, expected] of rows) judge(t, verdict(() => visibleWebhooks(scope, ENDPOINTS)), expected, what)
})
