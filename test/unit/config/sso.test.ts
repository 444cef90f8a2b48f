import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

const SSO = `
sso:
  oidc:
    issuer: https://login.example.com/realms/acme
    client_id: keygate
    redirect_uri: https://keygate-admin.example.com/console/sso/callback
`

t.test('sso.oidc: defaults, and the client secret from the environment only', async (t) => {
  const c = parseConfig(MINIMAL_CONFIG + SSO, { KEYGATE_OIDC_CLIENT_SECRET: 's3cret' })
  t.equal(c.sso.session_ttl, '8h')
  t.equal(c.sso.oidc?.scopes, 'openid email profile')
  t.equal(c.sso.oidc?.match, 'sub')
  t.equal(c.sso.oidc?.client_secret, 's3cret')
  t.equal(parseConfig(MINIMAL_CONFIG).sso.oidc, undefined, 'absent: SSO off')
  t.equal(parseConfig(MINIMAL_CONFIG + SSO).sso.oidc?.client_secret, undefined, 'no secret: a public client')
})

t.test('sso: every problem at once, each naming its field, and no secret echoed', async (t) => {
  const found = configProblems(MINIMAL_CONFIG + `
sso:
  session_ttl: 0h
  oidc:
    issuer: http://login.example.com
    client_id: keygate
    client_secret: hunter2-in-the-file
    redirect_uri: http://admin.example.com/console/callback
    scopes: "email profile"
    match: mail
    create_users: { org: "bad org", role: member }
`)
  const expected = [
    /^sso\.oidc\.client_secret: secrets never come from the file; set KEYGATE_OIDC_CLIENT_SECRET/,
    /^sso\.session_ttl: must be a duration above zero/,
    /^sso\.oidc\.match: must be one of "sub", "email", got "mail"/,
    /^sso\.oidc\.create_users\.org: must be an org name/,
    /^sso\.oidc\.issuer: must be https:\/\//,
    /^sso\.oidc\.redirect_uri: must be https:\/\//,
    /^sso\.oidc\.redirect_uri: its path must be under \/console\/sso\//,
    /^sso\.oidc\.scopes: must include openid/
  ]
  for (const e of expected) t.ok(found.some((p) => e.test(p)), `names ${String(e)}`)
  t.equal(found.length, expected.length, found.join('\n'))
  t.notMatch(found.join('\n'), /hunter2/)
})

t.test('sso: http only on a loopback host; email matching needs the email scope', async (t) => {
  t.same(configProblems(MINIMAL_CONFIG + `
sso:
  oidc: { issuer: "http://127.0.0.1:4000", client_id: k, redirect_uri: "http://localhost:8081/console/sso/callback" }
`), [])
  t.match(configProblems(MINIMAL_CONFIG + `
sso:
  oidc: { issuer: "https://idp.example", client_id: k, redirect_uri: "https://a.example/console/sso/callback", match: email, scopes: "openid profile" }
`), [/^sso\.oidc\.scopes: must include email when sso\.oidc\.match is email/])
  t.match(configProblems(MINIMAL_CONFIG + `
sso:
  oidc: { issuer: "https://idp.example", client_id: k, redirect_uri: "https://a.example/console/sso/login" }
`), [/^sso\.oidc\.redirect_uri: its path must be/])
})
