// Settings -> Users (admins: every org; org admins: their own org, which the API
// enforces): deactivate and activate; admins also create users and change a user's role
// or org (PUT /admin/v1/users/:id). Deactivating stops every personal key of the user at
// once; activating restores them. The BOT keys the user created keep working, and the
// page says which they are. Nobody deactivates themself (the API refuses it too).
import { api } from './api.js'
import { $, badge, confirmAction, h, say, sayError, show } from './dom.js'

export function usersPage (ctx) {
  const dialog = $('user-dialog')
  const form = $('user-form')
  let users = []
  let editing = null

  async function load () {
    const { principal } = ctx.session
    $('users-scope').textContent = (ctx.scope === 'org' ? `Users of org ${principal.org}. ` : '') +
      'Deactivating a user stops all of their personal keys at once; BOT keys are not affected.'
    show($('user-new'), ctx.scope === 'admin')
    ;({ users } = await api.users(ctx.scope === 'org' ? { org: principal.org } : {}))
    say($('users-notice'), '')
    $('users-body').replaceChildren(...users.map(row))
    show($('users-empty'), users.length === 0)
  }

  function row (u) {
    const active = u.status === 'active'
    const me = u.id === ctx.session.principal.user
    const status = me
      ? h('span', { class: 'muted small', 'data-testid': 'self' }, 'you')
      : active
        ? h('button', {
          type: 'button',
          class: 'button button-small button-danger-quiet',
          'data-action': 'deactivate',
          onclick: () => deactivate(u)
        }, 'Deactivate')
        : h('button', {
          type: 'button', class: 'button button-small', 'data-action': 'activate', onclick: () => activate(u)
        }, 'Activate')
    const edit = ctx.scope === 'admin'
      ? h('button', {
        type: 'button', class: 'button button-small', 'data-action': 'edit', onclick: () => open(u)
      }, 'Edit')
      : ''
    return h('tr', { 'data-user-id': u.id, 'data-status': u.status ?? '' },
      h('td', {}, h('div', {}, u.name ?? u.id), u.name ? h('div', { class: 'mono muted small' }, u.id) : ''),
      h('td', {}, u.email ?? ''),
      h('td', { 'data-field': 'org' }, u.org ?? ''),
      h('td', { 'data-field': 'role' }, h('code', { class: 'chip' }, u.role ?? '')),
      h('td', {}, badge(u.status ?? 'unknown', active ? 'ok' : 'off')),
      h('td', { class: 'actions' }, edit, ' ', status))
  }

  /** The user dialog (admins): a new user (`u` null), or another role or org for `u`. */
  async function open (u) {
    editing = u
    form.reset()
    say($('user-error'), '')
    $('user-title').textContent = u === null ? 'New user' : `Edit user ${u.id}`
    $('user-id').value = u?.id ?? ''
    $('user-id').readOnly = u !== null
    $('user-name').value = u?.name ?? ''
    $('user-email').value = u?.email ?? ''
    const [{ roles }, { orgs }] = await Promise.all([api.roles(), api.orgs({ in_use: 'true' })])
    $('user-role').replaceChildren(...roles.map((r) =>
      h('option', { value: r.name, selected: r.name === u?.role }, r.name)))
    $('user-orgs').replaceChildren(...orgs.map((o) => h('option', { value: o.org })))
    $('user-org').value = u?.org ?? ''
    $('user-org-hint').textContent = u === null
      ? 'An org in use, or a new one.'
      : 'An org in use, or a new one: the user moves to it.'
    dialog.showModal()
  }

  async function save (event) {
    event.preventDefault()
    const id = $('user-id').value.trim()
    const input = { org: $('user-org').value.trim(), role: $('user-role').value }
    const name = $('user-name').value.trim()
    const email = $('user-email').value.trim()
    if (name !== '' || editing?.name !== undefined) input.name = name
    if (email !== (editing?.email ?? '')) input.email = email
    $('user-submit').disabled = true
    try {
      if (editing === null && users.some((u) => u.id === id)) {
        throw new Error(`A user named "${id}" exists already: edit it instead.`)
      }
      if (!input.role) throw new Error('Pick the user\'s role (create one under Roles first).')
      const saved = await api.putUser(id, input)
      dialog.close()
      await load()
      const warnings = Array.isArray(saved?.warnings) ? saved.warnings.map((w) => w.reason) : []
      if (warnings.length > 0) say($('users-notice'), `${id} is saved. ${warnings.join(' ')}`)
    } catch (err) {
      if (err.status === 401) ctx.fail(err)
      else sayError($('user-error'), err)
    } finally {
      $('user-submit').disabled = false
    }
  }

  function deactivate (u) {
    let deactivated
    confirmAction({
      title: `Deactivate ${u.id}?`,
      message: `Every personal key of ${u.id} stops working at once. Their BOT keys keep working. ` +
        'You can activate the user again later, which restores their personal keys.',
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

  $('user-new').addEventListener('click', () => { open(null).catch(ctx.fail) })
  $('user-cancel').addEventListener('click', () => dialog.close())
  form.addEventListener('submit', save)

  return {
    load,
    clear () {
      users = []
      $('users-body').replaceChildren()
    }
  }
}
