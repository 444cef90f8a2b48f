// Settings -> Integrations: the caller's keys, the Generate New Key dialog with the
// one-time display of the new key, and revocation (after a confirmation).
import { api } from './api.js'
import {
  $, badge, checkedValues, confirmAction, guardReserved, h, permissionCheckboxes, permissionChips, say, sayError, show,
  timeCell
} from './dom.js'
import { editLimit, limitCell } from './limits.js'
import { drawScopePicker, lockCovered, pickedScope } from './scope-picker.js'
import { sparkline, usesOf } from './usage.js'

/** keys a page of the list shows (their last 24 h in one usage read a page) */
const PAGE_SIZE = 50
/** how long typing pauses before a search is sent */
const SEARCH_DELAY_MS = 250
/** the most requests one page makes while a search skips keys (the API reads a bounded number of keys per request) */
const PAGE_REQUESTS_MAX = 10

export function integrationsPage (ctx) {
  const dialog = $('generate-dialog')
  const form = $('generate-form')
  // the dialog's view of the registry, fetched when it opens
  let roles = []
  let users = []
  // org -> its key policy (key_max_ttl) in seconds, for the orgs that have one
  let orgCaps = new Map()

  // the list is searched and paged by the API (GET /keys?q=&limit=&cursor=, in key id
  // order): `cursors[i]` starts page i, `next` the page after the one shown
  let filter = {}
  let cursors = [undefined]
  let page = 0
  let next
  // each fetch's number: an answer to an older one (typing went on) is dropped
  let fetches = 0

  async function load () {
    const { principal } = ctx.session
    const scope = ctx.scope
    $('integrations-scope').textContent = scope === 'admin'
      ? 'Every key in the registry. A key is shown once, at creation; keygate keeps only a hash. Times are UTC.'
      : scope === 'org'
        ? `Every key of org ${principal.org}. A key is shown once, at creation; keygate keeps only a hash. ` +
          'Times are UTC.'
        : 'Your personal keys and the BOT keys you created. A key is shown once, at creation. Times are UTC.'
    show($('org-usage-open'), scope === 'org')
    filter = scope === 'self' ? { user: principal.user } : scope === 'org' ? { org: principal.org } : {}
    await fetchPage()
  }

  /** The page `page` (from its cursor), with the search typed: a short answer with a next_cursor goes on. */
  async function fetchPage () {
    const mine = ++fetches
    const q = $('keys-search').value.trim()
    const keys = []
    let cursor = cursors[page]
    let after
    for (let i = 0; i < PAGE_REQUESTS_MAX; i++) {
      const answer = await api.keys({ ...filter, q, limit: PAGE_SIZE - keys.length, cursor })
      keys.push(...answer.keys)
      after = answer.next_cursor
      if (after === undefined || keys.length >= PAGE_SIZE) break
      cursor = after
    }
    if (mine !== fetches) return
    next = after
    $('keys-body').replaceChildren(...keys.map(row))
    show($('keys-empty'), keys.length === 0 && page === 0 && q === '')
    $('keys-page').textContent = keys.length === 0
      ? (q === '' ? '' : 'No key matches.')
      : `${(page * PAGE_SIZE + 1).toLocaleString('en')}-${(page * PAGE_SIZE + keys.length).toLocaleString('en')}` +
        `${next === undefined ? ` of ${(page * PAGE_SIZE + keys.length).toLocaleString('en')}` : ''}`
    $('keys-prev').disabled = page === 0
    $('keys-next').disabled = next === undefined
    usageOf(keys, mine)
  }

  /**
   * The rows' last 24 h, one read for the page: each key's uses, a sparkline of them and its refused attempts apart
   * (a cell stays empty when it cannot be read).
   */
  function usageOf (keys, mine) {
    if (keys.length === 0) return
    api.keysUsage(keys.map((k) => k.id)).then(({ keys: read }) => {
      if (mine !== fetches) return
      for (const { id, points } of read) {
        const cell = $('keys-body').querySelector(`tr[data-key-id="${id}"] .usage`)
        if (cell === null) continue
        // the key's uses (allowed, limited, errors); refusals apart, so a revoked key hammered by
        // an old client reads 0 uses, not the refused attempts
        const uses = points.reduce((n, p) => n + usesOf(p), 0)
        const refused = points.reduce((n, p) => n + p.refused, 0)
        cell.replaceChildren(
          h('span', { class: 'usage-total', 'data-total': String(uses), title: 'uses in the last 24 hours' },
            uses.toLocaleString('en')), ' ',
          sparkline(points, `${uses} uses in the last 24 hours` + (refused > 0 ? `, ${refused} refused` : '')),
          refused > 0
            ? h('div', { class: 'muted small', 'data-refused': String(refused) },
              `${refused.toLocaleString('en')} refused`)
            : '')
      }
    }).catch(() => {})
  }

  let typing
  $('keys-search').addEventListener('input', () => {
    clearTimeout(typing)
    typing = setTimeout(() => {
      cursors = [undefined]
      page = 0
      fetchPage().catch(ctx.fail)
    }, SEARCH_DELAY_MS)
  })
  $('keys-prev').addEventListener('click', () => {
    if (page === 0) return
    page--
    fetchPage().catch(ctx.fail)
  })
  $('keys-next').addEventListener('click', () => {
    if (next === undefined) return
    cursors[page + 1] = next
    page++
    fetchPage().catch(ctx.fail)
  })

  $('org-usage-open').addEventListener('click', () => {
    const { org } = ctx.session.principal
    ctx.usage.open({ org }, `Requests of org ${org}`).catch(ctx.fail)
  })

  function row (k) {
    // (a long user or role name wraps, so the table still fits beside the navigation at 1,280 px)
    const owner = k.type === 'personal'
      ? h('td', { class: 'owner' }, h('span', { class: 'muted' }, 'user '), k.user ?? '')
      : h('td', { class: 'owner' }, h('span', { class: 'muted' }, 'role '), h('code', { class: 'chip' }, k.role ?? ''))
    const actions = k.status === 'active'
      ? h('button', {
        type: 'button',
        class: 'button button-small button-danger-quiet',
        'data-action': 'revoke',
        onclick: () => revoke(k)
      }, 'Revoke')
      : ''
    // (a key's own limit is an admin's to set: it replaces the default)
    const limit = ctx.scope === 'admin' && k.status === 'active'
      ? h('button', {
        type: 'button', class: 'button button-small', 'data-action': 'limit', onclick: () => limitKey(k)
      }, 'Limit')
      : ''
    const requests = h('button', {
      type: 'button',
      class: 'button button-small',
      'data-action': 'requests',
      onclick: () => ctx.requests.open(k.id, `Last decisions of ${k.name !== '' ? k.name : k.id}`).catch(ctx.fail)
    }, 'Requests')
    return h('tr', { 'data-key-id': k.id, 'data-status': k.status },
      h('td', {},
        h('div', {}, h('button', {
          type: 'button',
          class: 'link',
          'data-action': 'usage',
          onclick: () => ctx.usage.open({ key: k.id }, `Requests of ${k.name !== '' ? k.name : k.id}`).catch(ctx.fail)
        }, k.name !== '' ? k.name : 'unnamed')),
        h('div', { class: 'muted small nowrap' }, h('span', { class: 'mono' }, k.id), ` · ${k.org}`),
        restriction(k)),
      h('td', {}, badge(k.type === 'bot' ? 'BOT' : 'Personal', k.type === 'bot' ? 'bot' : 'personal'), envBadge(k)),
      owner,
      timeCell(k.created_at, ''),
      usageCell(timeCell(k.last_used_at, 'never')),
      timeCell(k.expires_at, 'never'),
      statusCell(k),
      limitCell(k.rate_limit, k.rate_limit_used),
      h('td', { class: 'actions' }, requests, ' ', limit, ' ', actions))
  }

  /** the Last used cell, with a place for the last 24 h below it */
  function usageCell (cell) {
    cell.append(h('div', { class: 'usage nowrap' }))
    return cell
  }

  /** A key's scope and addresses, its shadow restriction and its identity, when it has them. */
  function restriction (k) {
    const parts = []
    if (k.scope !== undefined) {
      parts.push(h('div', { class: 'key-restriction', 'data-testid': 'key-scope' },
        h('span', { class: 'muted' }, 'scope '), permissionChips(k.scope)))
    }
    if (k.allowed_cidrs !== undefined) {
      parts.push(h('div', { class: 'key-restriction', 'data-testid': 'key-cidrs' },
        h('span', { class: 'muted' }, 'from '), h('span', { class: 'mono' }, k.allowed_cidrs.join(' '))))
    }
    if (k.shadow_since !== undefined) parts.push(shadowRestriction(k))
    if (k.identity !== undefined) {
      // (a BOT key of an identity: it shares the identity's limits; its meta is shown with its chart)
      parts.push(h('div', { class: 'key-restriction', 'data-testid': 'key-identity' },
        h('span', { class: 'muted' }, 'identity '), h('span', { class: 'mono' }, k.identity)))
    }
    return parts.length === 0 ? '' : h('div', {}, ...parts)
  }

  /** A key's environment: a test key is marked (its requests reach only test upstreams); a live one says live. */
  function envBadge (k) {
    return k.env === 'test'
      ? h('div', { 'data-testid': 'key-env', 'data-env': 'test' }, badge('test', 'test'))
      : h('div', { 'data-testid': 'key-env', 'data-env': 'live', class: 'muted small' }, 'live')
  }

  /**
   * A key's shadow restriction (docs/safe-change.md): what it would be narrowed to, tried and never enforced;
   * "Would refuse" reads how many requests it would have refused and the last of them (method, path, reason, time).
   */
  function shadowRestriction (k) {
    const details = h('div', { class: 'muted small', 'data-testid': 'shadow-refused' })
    const load = () => api.key(k.id).then((full) => {
      const recent = full.shadow_recent ?? []
      details.replaceChildren(
        h('div', { 'data-count': String(full.shadow_refused ?? 0) },
          `would refuse ${(full.shadow_refused ?? 0).toLocaleString('en')} requests`),
        ...recent.map((e) => h('div', { class: 'mono', 'data-testid': 'shadow-example' },
          `${e.at} ${e.method} ${e.path} ${e.reason}`)))
    }).catch(ctx.fail)
    return h('div', { class: 'key-restriction', 'data-testid': 'key-shadow' },
      h('span', { class: 'muted' }, 'shadow (not enforced) '),
      k.shadow_scope !== undefined ? permissionChips(k.shadow_scope) : h('span', { class: 'muted' }, 'all of the role'),
      h('span', { class: 'muted' }, ' from '),
      h('span', { class: 'mono' }, k.shadow_allowed_cidrs?.join(' ') ?? 'any'), ' ',
      h('button', { type: 'button', class: 'link', 'data-action': 'shadow-refused', onclick: load }, 'Would refuse'),
      details)
  }

  /** The status; a key revoked because it leaked says so, and where it was found (as text, never a link). */
  function statusCell (k) {
    if (k.revoked_reason !== 'leaked') return h('td', {}, badge(k.status, k.status === 'active' ? 'ok' : 'off'))
    return h('td', { 'data-revoked-reason': 'leaked' },
      badge('revoked: leaked', 'off'),
      h('div', { class: 'muted small', title: k.leak_source ?? '' }, `found at ${k.leak_source ?? 'an unknown place'}`))
  }

  function limitKey (k) {
    editLimit({
      title: `Rate limit of ${k.name !== '' ? k.name : k.id}`,
      hint: "The key's own limit, in place of the default; its role's and org's limits apply too.",
      current: k.rate_limit,
      save: async (limit) => {
        await api.setKeyLimit(k.id, limit)
        await load()
      },
      fail: ctx.fail
    })
  }

  function revoke (k) {
    confirmAction({
      title: 'Revoke this key?',
      message: `"${k.name !== '' ? k.name : k.id}" (${k.id}) stops working at once, on every gateway instance. ` +
        'This cannot be undone.' +
        (k.id === ctx.session.principal.key_id
          ? ' This is the key you signed in with: the console signs you out.'
          : ''),
      confirm: 'Revoke key',
      action: () => api.revokeKey(k.id)
    }).then((ran) => ran ? load() : undefined).catch(ctx.fail)
  }

  // ---- the Generate New Key dialog -------------------------------------------------

  async function openDialog () {
    const { principal } = ctx.session
    const admin = ctx.scope === 'admin'
    form.reset()
    say($('generate-error'), '')
    show(form, true)
    show($('reveal'), false)
    // (an org admin's user list and role list are its org's, and the roles it may give)
    ;[{ roles }, { users }] = await Promise.all([api.roles(), ctx.manages ? api.users() : { users: [] }])
    // (an admin makes keys in any org and reads every org's policy; anyone else's is their own org's)
    // (and an admin's Org field suggests the orgs in use)
    const orgs = admin ? (await api.orgs({ in_use: 'true' })).orgs : []
    $('generate-orgs').replaceChildren(...orgs.map((o) => h('option', { value: o.org })))
    orgCaps = admin
      ? new Map(orgs.filter((o) => o.key_max_ttl !== undefined).map((o) => [o.org, durationSeconds(o.key_max_ttl)]))
      : new Map(ctx.session.org_key_max_ttl_s === undefined ? [] : [[principal.org, ctx.session.org_key_max_ttl_s]])
    // Personal: admins pick the user; everyone else (org admins included: a personal key
    // acts as its user, so only that user or an admin makes one) makes keys for themselves
    show($('generate-user-row'), admin)
    if (admin) {
      $('generate-user').replaceChildren(...users.filter((u) => u.status === 'active').map((u) =>
        h('option', { value: u.id, selected: u.id === principal.user },
          u.name ? `${u.id} (${u.name}, ${u.org})` : `${u.id} (${u.org})`)))
    }
    // BOT: admins choose the org and may define a new role; others use their own org and the roles they may give
    show($('generate-org-row'), admin)
    $('generate-org').value = principal.org ?? users[0]?.org ?? ''
    show($('generate-role-mode'), admin)
    $('generate-role').replaceChildren(...roles.map((r) => h('option', { value: r.name }, r.name)))
    permissionCheckboxes($('generate-new-role-permissions'), ctx.catalogue)
    offered = ''
    $('generate-cidrs').setAttribute('aria-invalid', 'false')
    sync()
    dialog.showModal()
  }

  /**
   * The expiries offered: a key lives at most its org's key policy (key_max_ttl), and a
   * BOT key made without keygate:admin at most bot_key_max_ttl_s (GET /session), so
   * longer choices are disabled and "never" reads as the shorter limit.
   */
  function offerExpiries (type) {
    const caps = [type === 'bot' ? ctx.session.bot_key_max_ttl_s : undefined, orgCaps.get(keyOrg(type))]
      .filter((c) => c !== undefined)
    const max = caps.length === 0 ? undefined : Math.min(...caps)
    const select = $('generate-expiry')
    for (const option of select.options) {
      const days = Number.parseInt(option.value, 10)
      option.disabled = max !== undefined && option.value !== '' && days * 86400 > max
      if (option.value === '') {
        option.textContent = max === undefined ? 'never' : `at the longest allowed (${formatDays(max)})`
      }
    }
    if (select.selectedOptions[0]?.disabled === true) select.value = ''
  }

  /** The org the key being made will be in: the user's (personal) or the chosen one (BOT). */
  function keyOrg (type) {
    if (ctx.scope !== 'admin') return ctx.session.principal.org
    if (type === 'bot') return form.elements.org.value.trim()
    return users.find((u) => u.id === $('generate-user').value)?.org
  }

  /** Shows the parts of the form that fit the chosen type and role mode. */
  function sync () {
    const type = form.elements.type.value
    const newRole = form.elements['role-mode'].value === 'new'
    offerExpiries(type)
    show($('generate-personal'), type === 'personal')
    show($('generate-bot'), type === 'bot')
    show($('generate-existing-role'), !newRole)
    show($('generate-new-role'), newRole)
    $('generate-personal-role').replaceChildren(personalRole())
    const role = roles.find((r) => r.name === $('generate-role').value)
    $('generate-role-permissions').replaceChildren(role === undefined
      ? h('span', { class: 'muted' }, 'No role you may assign.')
      : permissionChips(role.permissions))
    scopePicker(type, newRole ? undefined : role)
  }

  // the permissions the picker offers now, as text: it is drawn again only when they change
  let offered = ''

  /**
   * The scope picker (scope-picker.js): the permissions the key may be narrowed to, only
   * those the caller may give, with the concrete ones of the catalogue under each
   * wildcard; "all of the role" (no scope) by default. A personal key: its user's role's
   * (for a non-admin, its own effective permissions: `grantable` of GET /session); a BOT
   * key: the chosen role's (the roles offered are within the caller's grants already).
   * A role defined here is the key's whole scope.
   */
  function scopePicker (type, role) {
    const { principal } = ctx.session
    let permissions
    if (type === 'bot') permissions = role?.permissions ?? []
    else if (ctx.scope === 'admin') {
      const user = users.find((u) => u.id === $('generate-user').value)
      permissions = roles.find((r) => r.name === user?.role)?.permissions ?? principal?.permissions ?? []
    } else permissions = ctx.session.grantable ?? principal.permissions ?? []
    const all = $('generate-scope-all').checked
    $('generate-scope-all').disabled = type === 'bot' && form.elements['role-mode'].value === 'new'
    show($('generate-scope'), !all && !$('generate-scope-all').disabled)
    const text = permissions.join(' ')
    if (text === offered) return
    offered = text
    drawScopePicker($('generate-scope'), permissions, ctx.catalogue)
  }

  /** The addresses typed, checked as typed: each entry an IPv4 or IPv6 CIDR (the API checks them again). */
  function typedCidrs () {
    const entries = $('generate-cidrs').value.split(/[\s,]+/).filter((c) => c !== '')
    const bad = entries.filter((c) => !isCidr(c))
    const input = $('generate-cidrs')
    input.setAttribute('aria-invalid', String(bad.length > 0))
    input.setCustomValidity(bad.length > 0 ? `Not an address range: ${bad.join(', ')}` : '')
    $('generate-cidrs-hint').textContent = bad.length > 0
      ? `Not an IPv4 or IPv6 CIDR: ${bad.join(', ')}`
      : 'IPv4 or IPv6 CIDRs, space-separated. Empty: any address.'
    return { entries, bad }
  }

  /** The role a personal key would act with: the user's own, read-only. */
  function personalRole () {
    const { principal } = ctx.session
    let role, permissions
    if (ctx.scope === 'admin') {
      const user = users.find((u) => u.id === $('generate-user').value)
      if (user === undefined) return h('span', { class: 'muted' }, 'Pick a user.')
      role = user.role
      permissions = roles.find((r) => r.name === role)?.permissions
    } else {
      role = principal.role
      permissions = principal.permissions
    }
    return h('div', {},
      h('div', {}, 'Role ', h('strong', { 'data-testid': 'personal-role' }, role ?? ''),
        h('span', { class: 'muted' }, ' (the user\'s role; the key follows it when it changes)')),
      permissions === undefined
        ? h('span', { class: 'muted' }, 'unknown role: no permissions')
        : permissionChips(permissions))
  }

  async function submit (event) {
    event.preventDefault()
    const { principal } = ctx.session
    const f = form.elements
    const input = { type: f.type.value }
    if (f.env.value === 'test') input.env = 'test'
    const name = f.name.value.trim()
    if (name !== '') input.name = name
    if (f.expiry.value !== '') input.expires_in = f.expiry.value
    $('generate-submit').disabled = true
    say($('generate-error'), '')
    try {
      if (!$('generate-scope-all').checked && !$('generate-scope-all').disabled) {
        input.scope = pickedScope($('generate-scope'))
        if (input.scope.length === 0) throw new Error('Tick at least one permission, or keep all of the role\'s.')
      }
      const cidrs = typedCidrs()
      if (cidrs.bad.length > 0) throw new Error(`Not an address range: ${cidrs.bad.join(', ')}`)
      if (cidrs.entries.length > 0) input.allowed_cidrs = cidrs.entries
      if (input.type === 'personal') {
        input.user = ctx.scope === 'admin' ? f.user.value : principal.user
        if (!input.user) {
          throw new Error(ctx.scope === 'admin'
            ? 'Pick the user the key belongs to.'
            : 'A personal key is made by its own user or an admin; sign in as that user.')
        }
      } else {
        input.org = ctx.scope === 'admin' ? f.org.value.trim() : principal.org
        if (!input.org) throw new Error('Enter the org the BOT key acts in.')
        input.role = f['role-mode'].value === 'new' ? await defineRole() : f.role.value
        if (!input.role) throw new Error('Pick a role for the BOT key.')
      }
      reveal(await api.createKey(input))
    } catch (err) {
      if (err.status === 401) ctx.fail(err)
      else if (err.status === 400 && input.type === 'bot' && ctx.scope !== 'admin' && input.expires_in !== undefined) {
        // the one 400 a well-formed request from this dialog can get: the self-service limit
        say($('generate-error'),
          'Your BOT keys may not live that long: choose a shorter expiry, or "never" for the longest allowed.')
      } else sayError($('generate-error'), err)
    } finally {
      $('generate-submit').disabled = false
    }
  }

  /** Admins only: creates the role ticked in the dialog; refuses to overwrite one. */
  async function defineRole () {
    const name = $('generate-new-role-name').value.trim()
    const permissions = checkedValues($('generate-new-role-permissions'))
    if (name === '') throw new Error('Name the new role.')
    if (roles.some((r) => r.name === name)) {
      throw new Error(
        `A role named "${name}" exists already: choose it under "Use an existing role", or pick another name.`
      )
    }
    if (permissions.length === 0) throw new Error('Tick at least one permission for the new role.')
    await api.putRole(name, permissions)
    roles = [...roles, { name, permissions }]
    return name
  }

  function reveal (created) {
    show(form, false)
    show($('reveal'), true)
    $('reveal-key').value = created.key
    say($('reveal-copy-status'), '')
    const facts = [
      ['Key id', created.id], ['Type', created.type === 'bot' ? 'BOT' : 'Personal'],
      ['Environment', created.env === 'test' ? 'test' : 'live'], ['Org', created.org]
    ]
    if (created.user !== undefined) facts.push(['User', created.user])
    if (created.role !== undefined) facts.push(['Role', created.role])
    facts.push(['Expires', created.expires_at ?? 'never'])
    facts.push(['Scope', created.scope?.join(' ') ?? 'all of the role'])
    facts.push(['Addresses', created.allowed_cidrs?.join(' ') ?? 'any'])
    $('reveal-facts').replaceChildren(...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))
    // what the API accepted but wants known (an org with no record)
    const warnings = Array.isArray(created.warnings) ? created.warnings : []
    $('reveal-warnings').replaceChildren(...warnings.map((w) => h('li', { 'data-field': w.field }, w.reason)))
    show($('reveal-warnings'), warnings.length > 0)
    $('reveal-key').focus()
    $('reveal-key').select()
  }

  async function copy () {
    const input = $('reveal-key')
    try {
      await navigator.clipboard.writeText(input.value)
      say($('reveal-copy-status'), 'Copied to the clipboard.')
    } catch {
      input.focus()
      input.select()
      say($('reveal-copy-status'), 'Copying was blocked by the browser: the key is selected, press Ctrl+C (or Cmd+C).')
    }
  }

  function forgetKey () {
    $('reveal-key').value = ''
    $('reveal-facts').replaceChildren()
  }

  $('generate-open').addEventListener('click', () => { openDialog().catch(ctx.fail) })
  $('generate-cancel').addEventListener('click', () => dialog.close())
  form.addEventListener('change', sync)
  $('generate-scope').addEventListener('change', () => lockCovered($('generate-scope')))
  guardReserved($('generate-new-role-permissions'))
  $('generate-cidrs').addEventListener('input', typedCidrs)
  form.addEventListener('submit', submit)
  $('reveal-copy').addEventListener('click', copy)
  $('reveal-done').addEventListener('click', () => {
    forgetKey()
    dialog.close()
  })
  // while the key is on screen, only "I have copied it" closes the dialog (not Escape)
  dialog.addEventListener('cancel', (event) => { if (!$('reveal').hidden) event.preventDefault() })
  dialog.addEventListener('close', () => {
    // after a key was generated, the list shows it
    if (!$('reveal').hidden && ctx.session !== null) load().catch(ctx.fail)
    forgetKey()
    show($('reveal'), false)
    show(form, true)
  })

  return {
    load,
    clear () {
      forgetKey()
      show($('reveal'), false)
      roles = []
      users = []
      cursors = [undefined]
      page = 0
      next = undefined
      fetches++
      $('keys-search').value = ''
      $('keys-body').replaceChildren()
    }
  }
}

/** An IPv4 or IPv6 CIDR, or a bare address (one host); IPv6 parsed by the URL parser. */
function isCidr (text) {
  const slash = text.indexOf('/')
  const address = slash === -1 ? text : text.slice(0, slash)
  const bits = slash === -1 ? undefined : text.slice(slash + 1)
  let max
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) {
    if (address.split('.').some((o) => Number(o) > 255 || (o.length > 1 && o.startsWith('0')))) return false
    max = 32
  } else if (address.includes(':') && /^[0-9A-Fa-f:.]+$/.test(address)) {
    try {
      // (the URL parser is the browser's own IPv6 grammar; a bracketed host is parsed
      // as IPv6 under any scheme, and this one names no place)
      if (new URL(`cidr://[${address}]/`).hostname === '') return false
    } catch {
      return false
    }
    max = 128
  } else return false
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= max)
}

/** a duration as the API writes it (`90d`, `12h`, `30m`, `45s`) -> seconds */
function durationSeconds (text) {
  const m = /^(\d+)([smhd])$/.exec(text)
  return m === null ? undefined : Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2]]
}

/** seconds -> `90 days`, `1 day`, or `12 hours` under a day */
function formatDays (seconds) {
  if (seconds < 86400) return `${Math.max(1, Math.round(seconds / 3600))} hours`
  const days = Math.round(seconds / 86400)
  return days === 1 ? '1 day' : `${days} days`
}
