// The console's entry: sign-in, the Settings navigation, and the shared context the
// pages use. Pages: integrations.js (everyone), users.js (admins and org admins, who
// see their own org only), identities.js (admins and org admins, their org's
// identities), webhooks.js (admins and org admins, their org's endpoints), roles.js and
// orgs.js (admins).
//
// Scopes, as GET /session reports them: admin (every org), org (keygate:org:admin:
// its own org's users and keys), self (keygate:keys:self: its own user's keys).
// The API enforces them; the console only shows what the scope may use.
import { api, resumeSession, signedInWithSession, signIn, signOut, ssoProvider } from './api.js'
import { $, say, show } from './dom.js'
import { identitiesPage } from './identities.js'
import { integrationsPage } from './integrations.js'
import { orgsPage } from './orgs.js'
import { rolesPage } from './roles.js'
import { ssoErrorMessage } from './sso-errors.js'
import { usagePanel } from './usage.js'
import { requestsPanel } from './requests.js'
import { usersPage } from './users.js'
import { webhooksPage } from './webhooks.js'

const ctx = {
  /** GET /admin/v1/session: { principal, scope, admin, self } */
  session: null,
  /** 'admin' | 'org' | 'self' */
  get scope () {
    const s = this.session
    if (s === null) return null
    return s.scope ?? (s.admin ? 'admin' : s.self ? 'self' : 'org')
  },
  /** whether the caller manages other people's keys and users (admin, org admin) */
  get manages () {
    return this.scope === 'admin' || this.scope === 'org'
  },
  /** the permission catalogue (a non-admin: what of it its grants cover), for the role editors and the scope picker */
  catalogue: [],
  /** shows an error of a page action; a refused credential signs out */
  fail (err) {
    if (err?.status === 401) {
      leave(signedInWithSession()
        ? 'Your session ended: you signed out elsewhere, it expired, or your user was deactivated. Sign in again.'
        : 'Your credential was refused: it was revoked, expired, or its user was deactivated. Sign in again.')
      return
    }
    say($('page-error'), err?.message ?? String(err))
  }
}

// the chart of a key's, an org's or an identity's requests, opened from Integrations, Orgs and Identities
ctx.usage = usagePanel(ctx)
// a key's last decisions, opened from Integrations
ctx.requests = requestsPanel(ctx)

const pages = {
  integrations: integrationsPage(ctx),
  users: usersPage(ctx),
  identities: identitiesPage(ctx),
  roles: rolesPage(ctx),
  orgs: orgsPage(ctx),
  webhooks: webhooksPage(ctx)
}
let current = 'integrations'

start().catch((err) => say($('sign-in-error'), err?.message ?? String(err)))

/** On load: a message from a failed SSO sign-in, the SSO button, and a session the browser already holds. */
async function start () {
  // (a fixed sentence per code: a link can carry any text, sso-errors.js)
  const message = ssoErrorMessage(window.location.hash)
  if (message !== null) {
    // (the message leaves the address bar: a reload does not show it again)
    window.history.replaceState(null, '', window.location.pathname)
    say($('sign-in-error'), `Sign-in refused: ${message}`)
  }
  const [provider, session] = await Promise.all([ssoProvider(), resumeSession()])
  if (provider !== null) {
    $('sso-sign-in').textContent = `Sign in with ${provider}`
    show($('sso'), true)
  }
  if (session !== null) await entered(session)
}

async function entered (session) {
  ctx.session = session
  // (a non-admin's: the catalogue within its own grants, from GET /session)
  ctx.catalogue = ctx.scope === 'admin' ? (await api.permissions()).permissions : session.catalogue ?? []
  enter()
}

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault()
  const input = $('sign-in-key')
  const value = input.value.trim()
  // the credential leaves the DOM at once; from here on only api.js holds it
  input.value = ''
  say($('sign-in-error'), '')
  if (value === '') return
  $('sign-in-submit').disabled = true
  try {
    await entered(await signIn(value))
  } catch (err) {
    signOut()
    say($('sign-in-error'), err.status === 401 || err.status === 403
      ? 'That key or token was not accepted. It needs keygate:admin, keygate:org:admin or keygate:keys:self.'
      : err.message)
  } finally {
    $('sign-in-submit').disabled = false
  }
})

$('sign-out').addEventListener('click', () => leave(''))

for (const link of document.querySelectorAll('[data-page]')) {
  link.addEventListener('click', () => openPage(link.dataset.page))
}

function enter () {
  const { principal } = ctx.session
  $('principal').textContent = describe(principal)
  $('scope').textContent = scopeLabel(ctx.scope, principal)
  for (const el of document.querySelectorAll('[data-admin-only]')) show(el, ctx.scope === 'admin')
  for (const el of document.querySelectorAll('[data-manager-only]')) show(el, ctx.manages)
  show($('sign-in-view'), false)
  show($('whoami'), true)
  show($('app-view'), true)
  openPage('integrations')
}

function leave (message) {
  signOut()
  ctx.session = null
  ctx.catalogue = []
  for (const page of Object.values(pages)) page.clear()
  ctx.usage.close()
  ctx.requests.close()
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close()
  say($('page-error'), '')
  show($('app-view'), false)
  show($('whoami'), false)
  $('principal').textContent = ''
  $('scope').textContent = ''
  show($('sign-in-view'), true)
  say($('sign-in-error'), message)
  $('sign-in-key').focus()
}

async function openPage (name) {
  if (ctx.session === null || pages[name] === undefined) return
  if ((name === 'users' || name === 'identities' || name === 'webhooks') && !ctx.manages) return
  if ((name === 'roles' || name === 'orgs') && ctx.scope !== 'admin') return
  current = name
  ctx.usage.close()
  ctx.requests.close()
  say($('page-error'), '')
  for (const link of document.querySelectorAll('[data-page]')) {
    if (link.dataset.page === name) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  for (const section of document.querySelectorAll('[data-page-section]')) {
    show(section, section.dataset.pageSection === name)
  }
  try {
    await pages[name].load()
  } catch (err) {
    if (current === name) ctx.fail(err)
  }
}

/** The badge beside the principal: what it may administer. */
function scopeLabel (scope, principal) {
  if (scope === 'admin') return 'Admin (all orgs)'
  if (scope === 'org') return `Org admin: ${principal.org}`
  return `Own keys: ${principal.user ?? principal.key_id}`
}

function describe (principal) {
  if (principal.kind === 'token') return 'Admin token'
  if (principal.kind === 'session') {
    return `${principal.user} (${principal.org}, role ${principal.role}), signed in with SSO`
  }
  const who = principal.user !== undefined ? principal.user : `BOT key ${principal.key_id}`
  return `${who} (${principal.org}, role ${principal.role})`
}
