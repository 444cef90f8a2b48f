// Settings -> Orgs (admins): org records, each with its rate limit (one bucket for
// every key of the org) and the requests that bucket counts now.
import { api } from './api.js'
import { $, h, show } from './dom.js'
import { editLimit, limitCell } from './limits.js'

export function orgsPage (ctx) {
  async function load () {
    const { orgs } = await api.orgs()
    $('orgs-body').replaceChildren(...orgs.map(row))
    show($('orgs-empty'), orgs.length === 0)
  }

  function row (o) {
    return h('tr', { 'data-org': o.org },
      h('td', {}, h('strong', {}, o.org), o.name === undefined ? '' : h('div', { class: 'muted small' }, o.name)),
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
        }, 'Edit limit')))
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
