// DOM helpers. Everything that comes from the API is written with textContent or as
// an attribute value: never parsed as HTML (the CSP's Trusted Types would refuse it).

export const $ = (id) => {
  const el = document.getElementById(id)
  if (el === null) throw new Error(`#${id} is missing from index.html`)
  return el
}

/** h('td', { class: 'mono', title: id }, 'text', childNode, ...) */
export function h (tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value)
    else el.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue
    el.append(typeof child === 'string' ? document.createTextNode(child) : child)
  }
  return el
}

export function show (el, visible) {
  el.hidden = !visible
}

/** Shows `message` in an alert element, or hides it when message is empty. */
export function say (el, message) {
  el.textContent = message ?? ''
  el.hidden = !message
}

/**
 * Shows an error under the form that failed: its message, and below it each of a
 * refused write's details (the API's reasons, written as text).
 */
export function sayError (el, err) {
  const details = Array.isArray(err?.details) ? err.details : []
  el.replaceChildren(err?.message ?? String(err),
    details.length === 0
      ? ''
      : h('ul', { class: 'error-details' }, details.map((d) => h('li', { 'data-field': d.field }, d.reason))))
  el.hidden = false
}

/** The date, and below it the time (UTC); the full ISO time in the tooltip; `fallback` when absent. */
export function timeCell (iso, fallback) {
  if (!iso) return h('td', { class: 'muted' }, fallback)
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return h('td', {}, iso)
  const [date, time] = d.toISOString().slice(0, 16).split('T')
  return h('td', { class: 'nowrap', title: iso },
    h('time', { datetime: iso }, h('div', {}, date), h('div', { class: 'muted small' }, time)))
}

export function badge (text, kind) {
  return h('span', { class: `badge badge-${kind}` }, text)
}

export function permissionChips (permissions) {
  if (permissions.length === 0) return h('span', { class: 'muted' }, 'no permissions')
  return h('span', { class: 'chips' }, permissions.map((p) => h('code', { class: 'chip' }, p)))
}

/** Checkboxes for the permission catalogue, `checked` ticked; read them back with checkedValues. */
export function permissionCheckboxes (container, catalogue, checked = []) {
  const all = [...new Set([...catalogue, ...checked])].sort()
  container.replaceChildren(...all.map((p) =>
    h('label', { class: 'permission' },
      h('input', { type: 'checkbox', value: p, checked: checked.includes(p) }),
      h('code', {}, p))))
}

/** What each of keygate's own permissions lets a key of the role do, for the confirmation that grants it. */
const RESERVED_WARNINGS = {
  'keygate:admin': 'administer the whole registry: every org\'s keys, users, roles and limits, and new admins',
  'keygate:org:admin': 'manage their org\'s users and keys, and sign in to the console as its admin',
  'keygate:keys:self': 'make and revoke keys for their own user in the console'
}

/**
 * Ticking a `keygate:` permission in a role's grid asks first, with a warning of what it
 * grants; cancelled, the box stays unticked. (The API takes the role either way: this is
 * a guard against a slip, never the protection.)
 */
export function guardReserved (container) {
  container.addEventListener('change', (event) => {
    const input = event.target
    if (input?.type !== 'checkbox' || !input.checked || !input.value.startsWith('keygate:')) return
    input.checked = false
    const what = RESERVED_WARNINGS[input.value] ?? 'administer keygate itself'
    confirmAction({
      title: `Grant ${input.value}?`,
      message: `Every key with this role could ${what}. Grant it only to a role for administrators.`,
      confirm: `Grant ${input.value}`,
      action: async () => { input.checked = true }
    }).catch(() => {})
  })
}

export function checkedValues (container) {
  return [...container.querySelectorAll('input[type=checkbox]:checked')].map((i) => i.value)
}

/**
 * Asks before a destructive action. `action` runs on confirmation; its error is shown
 * in the dialog, which stays open. Resolves true when the action ran.
 */
export function confirmAction ({ title, message, confirm, action }) {
  const dialog = $('confirm-dialog')
  const form = $('confirm-form')
  $('confirm-title').textContent = title
  $('confirm-message').textContent = message
  $('confirm-ok').textContent = confirm
  say($('confirm-error'), '')
  return new Promise((resolve) => {
    const finish = (ran) => {
      form.removeEventListener('submit', onSubmit)
      $('confirm-cancel').removeEventListener('click', onCancel)
      dialog.removeEventListener('close', onClose)
      if (dialog.open) dialog.close()
      resolve(ran)
    }
    const onSubmit = async (event) => {
      event.preventDefault()
      $('confirm-ok').disabled = true
      try {
        await action()
        finish(true)
      } catch (err) {
        sayError($('confirm-error'), err)
      } finally {
        $('confirm-ok').disabled = false
      }
    }
    const onCancel = () => finish(false)
    const onClose = () => finish(false)
    form.addEventListener('submit', onSubmit)
    $('confirm-cancel').addEventListener('click', onCancel)
    dialog.addEventListener('close', onClose)
    dialog.showModal()
  })
}
