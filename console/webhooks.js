// Settings -> Webhooks (admins and org admins, who see their own org's endpoints): the
// endpoints (URL, events, org), one added with its signing secret shown once, removed,
// or sent a test event, and an endpoint's last deliveries (outcome, HTTP status,
// latency), each of which can be sent again. docs/webhooks.md; the API enforces the scope.
import { api } from './api.js'
import { $, badge, confirmAction, h, say, sayError, show, timeCell } from './dom.js'

/** the events an endpoint can ask for (src/webhooks/events.ts) */
export const EVENT_TYPES = [
  'key.created', 'key.rotated', 'key.revoked', 'key.leaked', 'key.expiring',
  'user.deactivated', 'quota.threshold', 'registry.applied'
]

const OUTCOME = { delivered: 'ok', failed: 'failed', retrying: 'test', pending: 'off' }

export function webhooksPage (ctx) {
  let open = null

  async function load () {
    const { webhooks } = await api.webhooks()
    $('webhooks-body').replaceChildren(...webhooks.map(row))
    show($('webhooks-empty'), webhooks.length === 0)
    if (open !== null && !webhooks.some((w) => w.id === open.id)) closeDeliveries()
  }

  function row (w) {
    const button = (action, label, onclick, cls = 'button button-small') =>
      h('button', { type: 'button', class: cls, 'data-action': action, onclick }, label)
    return h('tr', { 'data-webhook-id': w.id },
      h('td', { class: 'wrap-anywhere webhook-url' }, h('span', { class: 'mono' }, w.url),
        w.description === '' ? '' : h('div', { class: 'muted small' }, w.description)),
      h('td', { 'data-field': 'events' }, h('span', { class: 'small' }, w.events.join(', '))),
      h('td', { 'data-field': 'org' }, w.org ?? h('span', { class: 'muted' }, 'every org')),
      h('td', { class: 'actions' },
        button('deliveries', 'Deliveries', () => { showDeliveries(w).catch(ctx.fail) }), ' ',
        button('test', 'Send test', () => { sendTest(w).catch(ctx.fail) }), ' ',
        button('remove', 'Remove', () => remove(w), 'button button-small button-danger-quiet')))
  }

  async function sendTest (w) {
    await api.testWebhook(w.id)
    say($('webhooks-notice'), `A webhook.test event is on its way to ${w.url}.`)
    if (open?.id === w.id) await loadDeliveries()
  }

  function remove (w) {
    confirmAction({
      title: 'Remove this webhook?',
      message: `${w.url} receives no more events. Deliveries under way are dropped.`,
      confirm: 'Remove',
      action: async () => { await api.removeWebhook(w.id) }
    }).then(async (ran) => { if (ran) await load() }).catch(ctx.fail)
  }

  async function showDeliveries (w) {
    open = w
    $('deliveries-title').textContent = `Deliveries to ${w.url}`
    show($('deliveries-panel'), true)
    await loadDeliveries()
  }

  async function loadDeliveries () {
    if (open === null) return
    const { deliveries } = await api.webhookDeliveries(open.id)
    $('deliveries-body').replaceChildren(...deliveries.map(deliveryRow))
    show($('deliveries-empty'), deliveries.length === 0)
  }

  function deliveryRow (d) {
    return h('tr', { 'data-delivery-id': d.id },
      h('td', {}, h('span', { class: 'mono small' }, d.type)),
      h('td', { 'data-field': 'outcome' }, badge(d.status, OUTCOME[d.status] ?? 'off'),
        d.last_error === undefined ? '' : h('div', { class: 'muted small' }, d.last_error)),
      h('td', { class: 'num', 'data-field': 'status' }, d.last_status === undefined ? '-' : String(d.last_status)),
      h('td', { class: 'num', 'data-field': 'latency' }, d.latency_ms === undefined ? '-' : `${d.latency_ms} ms`),
      h('td', { class: 'num', 'data-field': 'attempts' }, String(d.attempts)),
      timeCell(d.last_attempt_at ?? d.created_at, '-'),
      h('td', { class: 'actions' }, h('button', {
        type: 'button',
        class: 'button button-small',
        'data-action': 'resend',
        onclick: () => {
          api.resendDelivery(open.id, d.id)
            .then(async () => { say($('webhooks-notice'), 'The delivery is sent again.'); await loadDeliveries() })
            .catch(ctx.fail)
        }
      }, 'Send again')))
  }

  function closeDeliveries () {
    open = null
    show($('deliveries-panel'), false)
    $('deliveries-body').replaceChildren()
  }

  function add () {
    const form = $('webhook-form')
    form.reset()
    show(form, true)
    show($('webhook-reveal'), false)
    say($('webhook-error'), '')
    show($('webhook-org-field'), ctx.scope === 'admin')
    $('webhook-events').replaceChildren(...EVENT_TYPES.map((e) =>
      h('label', { class: 'choice-option choice-inline' },
        h('input', { type: 'checkbox', name: 'events', value: e }), ` ${e}`)))
    $('webhook-dialog').showModal()
  }

  $('webhook-form').addEventListener('submit', async (event) => {
    event.preventDefault()
    const form = $('webhook-form')
    const events = [...form.querySelectorAll('input[name=events]:checked')].map((i) => i.value)
    if (events.length === 0) { say($('webhook-error'), 'Choose at least one event.'); return }
    const org = ctx.scope === 'admin' ? $('webhook-org').value.trim() : ''
    $('webhook-submit').disabled = true
    try {
      const input = { url: $('webhook-url').value.trim(), events, ...(org === '' ? {} : { org }) }
      const created = await api.addWebhook(input)
      $('webhook-secret').value = created.secret
      show(form, false)
      show($('webhook-reveal'), true)
      await load()
    } catch (err) {
      sayError($('webhook-error'), err)
    } finally {
      $('webhook-submit').disabled = false
    }
  })

  $('webhook-new').addEventListener('click', add)
  $('webhook-cancel').addEventListener('click', () => $('webhook-dialog').close())
  $('webhook-done').addEventListener('click', () => {
    // the secret leaves the DOM with the dialog: it is shown once
    $('webhook-secret').value = ''
    $('webhook-dialog').close()
  })
  $('webhook-dialog').addEventListener('close', () => { $('webhook-secret').value = '' })
  $('deliveries-refresh').addEventListener('click', () => { loadDeliveries().catch(ctx.fail) })
  $('deliveries-close').addEventListener('click', closeDeliveries)

  return {
    load,
    clear () {
      closeDeliveries()
      say($('webhooks-notice'), '')
      $('webhooks-body').replaceChildren()
    }
  }
}
