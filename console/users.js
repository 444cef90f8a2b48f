// Settings -> Users (admins: every org; org admins: their own org, which the API
// enforces): deactivate and activate. Deactivating stops every personal key of the
// user at once; activating restores them. The BOT keys the user created keep working,
// and the page says which they are.
import { api } from './api.js'
import { $, badge, confirmAction, h, say, show } from './dom.js'

export function usersPage (ctx) {
  async function load () {
    const { principal } = ctx.session
    $('users-scope').textContent = (ctx.scope === 'org' ? `Users of org ${principal.org}. ` : '') +
      'Deactivating a user stops all of their personal keys at once; BOT keys are not affected.'
    const { users } = await api.users(ctx.scope === 'org' ? { org: principal.org } : {})
    say($('users-notice'), '')
    $('users-body').replaceChildren(...users.map(row))
    show($('users-empty'), users.length === 0)
  }

  function row (u) {
    const active = u.status === 'active'
    const action = active
      ? h('button', {
        type: 'button',
        class: 'button button-small button-danger-quiet',
        'data-action': 'deactivate',
        onclick: () => deactivate(u)
      }, 'Deactivate')
      : h('button', {
        type: 'button', class: 'button button-small', 'data-action': 'activate', onclick: () => activate(u)
      }, 'Activate')
    return h('tr', { 'data-user-id': u.id, 'data-status': u.status ?? '' },
      h('td', {}, h('div', {}, u.name ?? u.id), u.name ? h('div', { class: 'mono muted small' }, u.id) : ''),
      h('td', {}, u.email ?? ''),
      h('td', {}, u.org ?? ''),
      h('td', {}, h('code', { class: 'chip' }, u.role ?? '')),
      h('td', {}, badge(u.status ?? 'unknown', active ? 'ok' : 'off')),
      h('td', { class: 'actions' }, action))
  }

  function deactivate (u) {
    let deactivated
    confirmAction({
      title: `Deactivate ${u.id}?`,
      message: `Every personal key of ${u.id} stops working at once. Their BOT keys keep working. ` +
        'You can activate the user again later, which restores their personal keys.' +
        (u.id === ctx.session.principal.user ? ' This is you: the key you signed in with stops too.' : ''),
      confirm: 'Deactivate',
      action: async () => { deactivated = await api.setUserStatus(u.id, false) }
    }).then(async (ran) => {
      if (!ran) return
      await load()
      const kept = deactivated?.created_keys ?? []
      if (kept.length > 0) {
        say($('users-notice'),
          `${u.id} is deactivated. BOT keys they created still work: ${kept.join(', ')} ` +
          '(revoke them under Integrations).')
      }
    }).catch(ctx.fail)
  }

  function activate (u) {
    api.setUserStatus(u.id, true).then(load).catch(ctx.fail)
  }

  return {
    load,
    clear () { $('users-body').replaceChildren() }
  }
}
