// Generate New Key's scope picker: the permissions a key may be narrowed to, grouped by
// resource. A wildcard the role grants (`*`, `items:*`) is offered with the concrete
// permissions of the catalogue (GET /admin/v1/permissions) it covers, so a role of
// `items:*` can give an `items:read` key. While a wildcard is ticked, what it covers is
// ticked and locked; unticking it frees them to be picked one by one. A wildcard never
// covers a `keygate:` permission (the API's rule: only a role that names one grants it).
import { h } from './dom.js'

const RESERVED = 'keygate:'

/** Whether the granted permission `grant` (maybe a wildcard) covers `permission`. */
export function covers (grant, permission) {
  if (grant === permission) return true
  if (permission.startsWith(RESERVED)) return false
  if (grant === '*') return true
  return grant.endsWith(':*') && permission.startsWith(grant.slice(0, -1))
}

/** The role's permissions and, under each wildcard, the catalogue's permissions it covers; sorted, each once. */
export function offeredPermissions (permissions, catalogue) {
  const offered = new Set(permissions)
  for (const grant of permissions) {
    if (grant !== '*' && !grant.endsWith(':*')) continue
    for (const p of catalogue) if (!p.endsWith('*') && covers(grant, p)) offered.add(p)
  }
  return [...offered].sort()
}

/** Draws the picker into `container`: every permission ticked, grouped by resource. */
export function drawScopePicker (container, permissions, catalogue) {
  const offered = offeredPermissions(permissions, catalogue)
  if (offered.length === 0) {
    container.replaceChildren(h('span', { class: 'muted' }, 'no permissions'))
    return
  }
  const groups = new Map()
  for (const p of offered) {
    const resource = p === '*' ? 'everything' : p.split(':')[0]
    groups.set(resource, [...groups.get(resource) ?? [], p])
  }
  container.replaceChildren(...[...groups].map(([resource, list]) =>
    h('fieldset', { 'data-resource': resource },
      h('legend', {}, resource),
      h('div', { class: 'permission-grid' }, ...list.map((p) =>
        h('label', { class: 'permission' },
          h('input', {
            type: 'checkbox', value: p, checked: true, 'data-wildcard': p.endsWith('*') ? 'true' : undefined
          }),
          h('code', {}, p),
          p.endsWith('*') ? h('span', { class: 'muted small' }, ' (all of these)') : ''))))))
  lockCovered(container)
}

/** Ticks and locks what a ticked wildcard covers; frees what none covers. */
export function lockCovered (container) {
  const inputs = [...container.querySelectorAll('input[type=checkbox]')]
  // (a wildcard locked by a wider one counts as ticked)
  const ticked = inputs.filter((i) => i.dataset.wildcard === 'true' && i.checked).map((i) => i.value)
  for (const input of inputs) {
    const locked = ticked.some((w) => w !== input.value && covers(w, input.value))
    input.disabled = locked
    if (locked) input.checked = true
    input.closest('label')?.classList.toggle('covered', locked)
  }
}

/** The scope the picker holds: each ticked permission that no ticked wildcard already covers. */
export function pickedScope (container) {
  return [...container.querySelectorAll('input[type=checkbox]:checked')]
    .filter((i) => !i.disabled)
    .map((i) => i.value)
}
