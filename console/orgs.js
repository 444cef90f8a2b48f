// Settings -> Orgs (admins): every org in use (named on a user or a key) and every org
// record (GET /orgs?in_use=true), each with its users and keys, its rate limit (one
// bucket for every key of the org) and the requests that bucket counts now.
import { api } from './api.js'
import { $, h, show } from './dom.js'
import { editLimit, limitCell } from './limits.js'

export function orgsPage (ctx) {
  async function load () {
    const { orgs } = await api.orgs({ in_use: 'true' })
    $('orgs-body').replaceChildren(...orgs.map(row))
    show($('orgs-empty'), orgs.length === 0)
  }

  function row (o) {
    return h('tr', { 'data-org': o.org, 'data-record': String(o.record === true) },
      h('td', {}, h('strong', {}, o.org), o.name === undefined ? '' : h('div', { class: 'muted small' }, o.name),
        o.record === false ? h('div', { class: 'muted small' }, 'no record') : ''),
      h('td', { class: 'num', 'data-field': 'users' }, String(o.users ?? 0)),
      h('td', { class: 'num', 'data-field': 'keys' }, String(o.keys ?? 0)),
      limitCell(o.rate_limit, o.rate_limit_used),
      h('td', { class: 'actions' },
        h('button', {
          type: 'button',
          class: 'button button-small',
          'data-action': 'usage',
          onclick: () => ctx.usage.open({ org: o.org }, `Requests of org ${o.org}`).catch(ctx.fail)
        }, 'Usage'), ' ',
        h('button', {
          type: 'button', class: 'button button-small', 'data-action': 'limit', onclick: () => edit(o)
        }, o.rate_limit === undefined ? 'Set limit' : 'Edit limit')))
  }

  function edit (o) {
    editLimit({
      title: o === null ? 'Org rate limit' : `Rate limit of ${o.org}`,
      hint: 'One bucket shared by every key of the org, on every gateway.',
      current: o?.rate_limit,
      org: o === null,
      save: async (limit, org, name) => {
        await api.putOrg(o?.org ?? org, { rate_limit: limit, ...(o === null && name !== '' ? { name } : {}) })
        await load()
      },
      fail: ctx.fail
    })
  }

  $('org-new').addEventListener('click', () => edit(null))

  return {
    load,
    clear () { $('orgs-body').replaceChildren() }
  }
}
