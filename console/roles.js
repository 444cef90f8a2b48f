// Settings -> Roles (admins): the roles, their permissions and rate limits, and an
// editor that ticks permissions from the catalogue. Deleting a role in use needs a second, forced step.
import { api } from './api.js'
import {
  $, checkedValues, confirmAction, guardReserved, h, permissionCheckboxes, permissionChips, say, sayError, show
} from './dom.js'
import { limitCell } from './limits.js'

export function rolesPage (ctx) {
  const dialog = $('role-dialog')
  const form = $('role-form')
  let editing = null

  async function load () {
    const { roles } = await api.roles()
    $('roles-body').replaceChildren(...roles.map(row))
    show($('roles-empty'), roles.length === 0)
  }

  function row (r) {
    return h('tr', { 'data-role': r.name },
      h('td', {}, h('strong', {}, r.name)),
      h('td', {}, permissionChips(r.permissions)),
      h('td', {}, r.description ?? ''),
      limitCell(r.rate_limit),
      h('td', { class: 'actions' },
        h('button', {
          type: 'button', class: 'button button-small', 'data-action': 'edit', onclick: () => edit(r)
        }, 'Edit'),
        ' ',
        h('button', {
          type: 'button',
          class: 'button button-small button-danger-quiet',
          'data-action': 'delete',
          onclick: () => remove(r)
        }, 'Delete')))
  }

  function edit (r) {
    editing = r
    form.reset()
    say($('role-error'), '')
    $('role-title').textContent = r === null ? 'New role' : `Edit role ${r.name}`
    $('role-name').value = r?.name ?? ''
    $('role-name').readOnly = r !== null
    $('role-description').value = r?.description ?? ''
    $('role-rate-limit').value = r?.rate_limit ?? ''
    permissionCheckboxes($('role-permissions'), ctx.catalogue, r?.permissions ?? [])
    dialog.showModal()
  }

  async function save (event) {
    event.preventDefault()
    const name = $('role-name').value.trim()
    const description = $('role-description').value.trim()
    const limit = $('role-rate-limit').value.trim()
    // (emptied: removed; never set: not sent)
    const rateLimit = limit !== '' ? limit : editing?.rate_limit !== undefined ? null : undefined
    $('role-submit').disabled = true
    try {
      if (editing === null && (await api.roles()).roles.some((r) => r.name === name)) {
        throw new Error(`A role named "${name}" exists already: edit it instead.`)
      }
      await api.putRole(
        name, checkedValues($('role-permissions')), description === '' ? undefined : description, rateLimit
      )
      dialog.close()
      await load()
    } catch (err) {
      if (err.status === 401) ctx.fail(err)
      else sayError($('role-error'), err)
    } finally {
      $('role-submit').disabled = false
    }
  }

  function remove (r) {
    // the API refuses a role still in use, naming its users and keys; a second
    // confirmation deletes it anyway (force)
    let force = false
    confirmAction({
      title: `Delete role ${r.name}?`,
      message: 'Users and BOT keys with this role would lose its permissions. ' +
        'A role still in use is only deleted if you confirm a second time.',
      confirm: 'Delete role',
      action: async () => {
        try {
          await api.deleteRole(r.name, force)
        } catch (err) {
          if (force || err.status !== 409) throw err
          force = true
          $('confirm-ok').textContent = 'Delete anyway'
          throw new Error(
            'This role is still used by users or BOT keys. Delete anyway? They will then have no permissions from it.'
          )
        }
      }
    }).then((ran) => ran ? load() : undefined).catch(ctx.fail)
  }

  guardReserved($('role-permissions'))
  $('role-new').addEventListener('click', () => edit(null))
  $('role-cancel').addEventListener('click', () => dialog.close())
  form.addEventListener('submit', save)

  return {
    load,
    clear () { $('roles-body').replaceChildren() }
  }
}
