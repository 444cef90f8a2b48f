// Settings -> Identities (admins, and org admins for their own org): an identity is one
// customer of the team's, whose BOT keys share its rate limit, quota and credits, and
// whose external id and meta the upstream receives (docs/identities.md). New and Edit
// (org, external id, meta as JSON, limits, credits), Open (its facts, its keys, and its
// requests in the usage panel: the sum of its keys), Delete (after a confirmation; an
// identity active keys name takes a second one, which revokes them). The API enforces
// the scope: another org's identity answers 404.
import { api } from './api.js'
import { $, badge, confirmAction, h, say, sayError, show, timeCell } from './dom.js'
import { limitCell } from './limits.js'

/** the largest meta, in bytes of its JSON text (src/registry/meta.ts); the API checks it again */
const META_MAX_BYTES = 1024

export function identitiesPage (ctx) {
  const dialog = $('identity-dialog')
  const form = $('identity-form')
  // the identity the dialog edits (null: a new one), and the one opened below the list
  let editing = null
  let open = null

  async function load () {
    const { identities } = await api.identities()
    $('identities-body').replaceChildren(...identities.map(row))
    show($('identities-empty'), identities.length === 0)
    if (open === null) return
    if (identities.some((i) => i.id === open)) await showIdentity(open)
    else closeIdentity()
  }

  function row (i) {
    const button = (action, label, onclick, cls = 'button button-small') =>
      h('button', { type: 'button', class: cls, 'data-action': action, onclick }, label)
    const metaFields = i.meta === undefined ? [] : Object.keys(i.meta)
    return h('tr', { 'data-identity-id': i.id },
      h('td', { class: 'wrap-anywhere' }, h('strong', {}, i.id),
        h('div', { class: 'muted small' }, 'external id ',
          h('span', { class: 'mono', 'data-field': 'external-id' }, i.external_id)),
        metaFields.length === 0
          ? ''
          : h('div', { class: 'muted small', 'data-field': 'meta-fields' }, `meta: ${metaFields.join(', ')}`)),
      h('td', { 'data-field': 'org' }, i.org),
      h('td', { class: 'num', 'data-field': 'keys' }, String(i.keys?.length ?? 0)),
      limitCell(i.rate_limit, undefined),
      h('td', { 'data-field': 'allowance' }, allowance(i)),
      h('td', { class: 'actions' },
        button('open', 'Open', () => { openIdentity(i.id).catch(ctx.fail) }), ' ',
        button('edit', 'Edit', () => edit(i)), ' ',
        button('delete', 'Delete', () => remove(i), 'button button-small button-danger-quiet')))
  }

  /** An identity's quota and credits as set on its record; its use is in its panel. */
  function allowance (i) {
    const parts = []
    if (i.quota !== undefined) parts.push(h('div', {}, h('code', { class: 'chip' }, i.quota)))
    if (i.credits !== undefined) parts.push(h('div', { class: 'small' }, `${i.credits} credits`))
    return parts.length === 0 ? h('span', { class: 'muted' }, 'none') : parts
  }

  async function openIdentity (id) {
    open = id
    await showIdentity(id)
    await ctx.usage.open({ identity: id }, `Requests of identity ${id}`)
  }

  /** The panel of the opened identity: its record, its limit's use now, and the keys that name it. */
  async function showIdentity (id) {
    const [view, { keys }] = await Promise.all([api.identity(id), api.identityKeys(id)])
    if (open !== id) return
    $('identity-panel-title').textContent = `Identity ${id}`
    const facts = [
      ['Org', view.org, 'org'],
      ['External id', view.external_id, 'external-id'],
      ['Meta', view.meta === undefined ? 'none' : JSON.stringify(view.meta), 'meta'],
      ['Rate limit', view.rate_limit === undefined
        ? 'none'
        : `${view.rate_limit} (${view.rate_limit_used ?? 0} used now)`, 'rate-limit'],
      ['Quota', view.quota ?? 'none', 'quota'],
      ['Credits', view.credits ?? 'none', 'credits']
    ]
    $('identity-facts').replaceChildren(...facts.flatMap(([k, v, field]) =>
      [h('dt', {}, k), h('dd', { class: 'wrap-anywhere', 'data-field': field }, v)]))
    $('identity-keys-body').replaceChildren(...keys.map(keyRow))
    show($('identity-keys-empty'), keys.length === 0)
    show($('identity-panel'), true)
  }

  function keyRow (k) {
    const name = k.name !== '' ? k.name : k.id
    return h('tr', { 'data-key-id': k.id, 'data-status': k.status },
      h('td', { class: 'wrap-anywhere' },
        h('button', {
          type: 'button',
          class: 'link',
          'data-action': 'key-usage',
          onclick: () => ctx.usage.open({ key: k.id }, `Requests of ${name}`).catch(ctx.fail)
        }, k.name !== '' ? k.name : 'unnamed'),
        h('div', { class: 'muted small mono' }, k.id)),
      h('td', {}, badge(k.status, k.status === 'active' ? 'ok' : 'off')),
      timeCell(k.last_used_at, 'never'),
      timeCell(k.expires_at, 'never'))
  }

  function closeIdentity () {
    open = null
    show($('identity-panel'), false)
    $('identity-facts').replaceChildren()
    $('identity-keys-body').replaceChildren()
    ctx.usage.close()
  }

  function edit (i) {
    editing = i
    form.reset()
    say($('identity-error'), '')
    const admin = ctx.scope === 'admin'
    $('identity-title').textContent = i === null ? 'New identity' : `Edit identity ${i.id}`
    $('identity-id').value = i?.id ?? ''
    $('identity-id').readOnly = i !== null
    show($('identity-org-field'), i === null && admin)
    $('identity-org').required = i === null && admin
    $('identity-org-hint').textContent = i !== null
      ? `In org ${i.org}: an identity never moves to another org.`
      : admin ? '' : `In your org, ${ctx.session.principal.org}.`
    $('identity-external-id').value = i?.external_id ?? ''
    $('identity-meta').value = i?.meta === undefined ? '' : JSON.stringify(i.meta, null, 2)
    $('identity-rate-limit').value = i?.rate_limit ?? ''
    $('identity-quota').value = i?.quota ?? ''
    $('identity-credits-label').textContent = i === null ? 'Credits' : 'Add credits'
    dialog.showModal()
  }

  async function save (event) {
    event.preventDefault()
    const id = $('identity-id').value.trim()
    const input = { external_id: $('identity-external-id').value.trim() }
    $('identity-submit').disabled = true
    say($('identity-error'), '')
    try {
      // (a field emptied removes what the identity had; one never set is left out)
      const meta = metaOf($('identity-meta').value)
      if (meta !== undefined) input.meta = meta
      else if (editing?.meta !== undefined) input.meta = null
      for (const [field, el] of [['rate_limit', 'identity-rate-limit'], ['quota', 'identity-quota']]) {
        const value = $(el).value.trim()
        if (value !== '') input[field] = value
        else if (editing?.[field] !== undefined) input[field] = null
      }
      const credits = creditsOf($('identity-credits').value)
      if (editing === null) {
        if (ctx.scope === 'admin') input.org = $('identity-org').value.trim()
        if (credits !== undefined) input.credits = credits
        if (await exists(id)) throw new Error(`An identity "${id}" exists already: edit it instead.`)
      }
      await api.putIdentity(id, input)
      if (editing !== null && credits !== undefined && credits > 0) {
        await api.meterIdentity(id, { add_credits: credits })
      }
      dialog.close()
      await load()
    } catch (err) {
      if (err.status === 401) ctx.fail(err)
      else sayError($('identity-error'), err)
    } finally {
      $('identity-submit').disabled = false
    }
  }

  /** Whether the caller already sees an identity of that id (a new one never overwrites it). */
  async function exists (id) {
    try {
      await api.identity(id)
      return true
    } catch (err) {
      if (err.status === 404) return false
      throw err
    }
  }

  function remove (i) {
    // the API refuses an identity active keys name; a second confirmation deletes it
    // anyway (force), revoking them in the same change
    let force = false
    confirmAction({
      title: `Delete identity ${i.id}?`,
      message: `Its external id ${i.external_id}, meta and limits are removed. ` +
        'An identity that active keys name is only deleted if you confirm a second time, which revokes them.',
      confirm: 'Delete identity',
      action: async () => {
        try {
          const { revoked } = await api.deleteIdentity(i.id, force)
          say($('identities-notice'), revoked.length === 0
            ? `Identity ${i.id} deleted.`
            : `Identity ${i.id} deleted; its keys ${revoked.join(', ')} are revoked.`)
        } catch (err) {
          if (force || err.status !== 409) throw err
          force = true
          $('confirm-ok').textContent = 'Delete and revoke its keys'
          const why = err.details?.[0]?.reason ?? 'active keys name the identity'
          throw new Error(`${why[0].toUpperCase()}${why.slice(1)}. Delete it anyway? ` +
            'They are revoked with it on every gateway, which cannot be undone.')
        }
      }
    }).then(async (ran) => { if (ran) await load() }).catch(ctx.fail)
  }

  $('identity-new').addEventListener('click', () => edit(null))
  $('identity-cancel').addEventListener('click', () => dialog.close())
  $('identity-panel-close').addEventListener('click', closeIdentity)
  form.addEventListener('submit', save)

  return {
    load,
    clear () {
      closeIdentity()
      say($('identities-notice'), '')
      $('identities-body').replaceChildren()
    }
  }
}

/** The meta typed: empty (none), or a JSON object of at most META_MAX_BYTES; an error never quotes it. */
function metaOf (text) {
  if (text.trim() === '') return undefined
  let value
  try {
    value = JSON.parse(text)
  } catch {
    throw new Error('Meta is not JSON: write an object, like {"plan": "pro"}.')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('Meta must be a JSON object, like {"plan": "pro"}.')
  }
  const bytes = new TextEncoder().encode(JSON.stringify(value)).length
  if (bytes > META_MAX_BYTES) throw new Error(`Meta is ${bytes} bytes of JSON, more than ${META_MAX_BYTES}.`)
  return value
}

/** Credits typed: empty (none), or a whole number of at least 0. */
function creditsOf (text) {
  const value = text.trim()
  if (value === '') return undefined
  if (!/^(0|[1-9][0-9]{0,14})$/.test(value)) throw new Error('Credits are a whole number of at least 0.')
  return Number(value)
}
