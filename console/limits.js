// Rate limits (admins): a limit's text and its use, and one dialog to set or remove
// a key's, a role's or an org's limit. `<count>/<period>`: the API checks it again.
import { $, h, say, sayError } from './dom.js'

/** A table cell: the limit, and (when the API reports it) the requests its window counts now. */
export function limitCell (limit, used) {
  if (limit === undefined) return h('td', { class: 'muted' }, 'none')
  return h('td', { class: 'nowrap' }, h('code', { class: 'chip' }, limit),
    used === undefined ? '' : h('div', { class: 'muted small' }, `${used} used now`))
}

/**
 * Opens the limit dialog; `save(limit | null)` runs on submit (null: remove the limit).
 * `org`: true to ask for an org name too (a new org's limit); then `save(limit, org, name)`.
 */
export function editLimit ({ title, hint, current, org = false, save, fail }) {
  const dialog = $('limit-dialog')
  $('limit-form').reset()
  say($('limit-error'), '')
  $('limit-title').textContent = title
  $('limit-hint').textContent = hint
  $('limit-value').value = current ?? ''
  $('limit-org-fields').hidden = !org
  $('limit-org').required = org
  $('limit-remove').hidden = current === undefined
  const submit = async (value) => {
    try {
      await save(value, $('limit-org').value.trim(), $('limit-org-name').value.trim())
      dialog.close()
    } catch (err) {
      if (err.status === 401) {
        dialog.close()
        fail(err)
      } else sayError($('limit-error'), err)
    }
  }
  $('limit-form').onsubmit = (event) => {
    event.preventDefault()
    submit($('limit-value').value.trim())
  }
  $('limit-remove').onclick = () => submit(null)
  $('limit-cancel').onclick = () => dialog.close()
  dialog.showModal()
}
