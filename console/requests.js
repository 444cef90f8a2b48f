// A key's last decisions (GET /keys/:id/requests: docs/request-log.md), newest first, in a
// table that refreshes every few seconds while it is open, filtered by status or class.
// Never a query string, header value or body: the API has none to give.
import { api } from './api.js'
import { $, h, show } from './dom.js'

/** how often the open table is read again */
const REFRESH_MS = 5000

export function requestsPanel (ctx) {
  let keyId = null
  let timer = null

  async function open (id, title) {
    keyId = id
    $('requests-title').textContent = title
    show($('requests-panel'), true)
    clearInterval(timer)
    timer = setInterval(() => { draw().catch(ctx.fail) }, REFRESH_MS)
    await draw()
    $('requests-panel').scrollIntoView?.({ block: 'nearest' })
  }

  async function draw () {
    if (keyId === null) return
    const status = $('requests-status').value
    const { requests } = await api.keyRequests(keyId, status === '' ? {} : { status })
    $('requests-body').replaceChildren(...requests.map((r) =>
      h('tr', { 'data-status': String(r.status) },
        h('td', { class: 'mono nowrap' }, r.time.slice(0, 19).replace('T', ' ')),
        h('td', { class: 'mono' }, r.method),
        h('td', { class: 'mono path' }, r.path),
        h('td', { class: 'num' }, String(r.status)),
        h('td', {}, r.reason),
        h('td', { class: 'num' }, r.latency_ms.toLocaleString('en', { maximumFractionDigits: 1 })),
        h('td', { class: 'mono' }, r.client),
        h('td', { class: 'mono small' }, r.trace_id))))
    $('requests-count').textContent = requests.length === 0
      ? 'No decision of this key in the last 24 hours.'
      : `${requests.length} decisions, newest first (UTC); refreshed every ${REFRESH_MS / 1000} s.`
  }

  $('requests-status').addEventListener('change', () => { draw().catch(ctx.fail) })
  $('requests-close').addEventListener('click', () => close())

  function close () {
    keyId = null
    clearInterval(timer)
    timer = null
    show($('requests-panel'), false)
  }

  return { open, close }
}
