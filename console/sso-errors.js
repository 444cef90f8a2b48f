// What the sign-in page says after a refused SSO sign-in. keygate sends the browser back
// with a code in the URL's fragment (src/admin/sso/routes.ts): `#sso_error=<code>`, with
// `claim` and `value` (the claim the person matched no user by) or `retry` (seconds).
// Anyone can write such a link, so the page shows only these fixed sentences: a code it
// does not know gets the general one, and a value is shown only as a single token of
// printable characters, quoted, never as words of its own.

const GENERAL = 'the sign-in did not succeed; sign in again'

/** the claim's value, as one printable token of at most 254 characters (an email's most), or undefined */
const VALUE = /^[^\s\p{C}]{1,254}$/u
const RETRY = /^[0-9]{1,4}$/

const SENTENCES = {
  too_many_sign_ins_here: (p) => `too many sign-ins from this address; try again ${p.retry}`,
  too_many_sign_ins: (p) => `too many sign-ins at once; try again ${p.retry}`,
  provider_unreachable: () => 'the identity provider cannot be reached; try again later',
  no_login: () => 'the sign-in expired or was already used; sign in again',
  provider_answer_refused: () => 'the sign-in with the identity provider did not succeed; sign in again',
  match_failed: () => 'the sign-in could not be completed; try again later',
  no_user: (p) => `no keygate user matches ${p.by}`,
  user_deactivated: (p) => `the keygate user matching ${p.by} is deactivated`,
  no_user_bad_id: (p) => `no keygate user matches ${p.by}, and it is no valid user id to create one with`,
  no_user_id_taken: (p) => `no keygate user matches ${p.by}, and its user id is taken`,
  no_email: () => 'the identity provider sent no email',
  email_unverified: (p) => `the identity provider does not report ${p.by} as verified`,
  email_ambiguous: (p) => `more than one keygate user has ${p.by}`
}

/**
 * The sentence for a URL fragment (`#sso_error=...`), or null when the fragment holds no
 * SSO error.
 */
export function ssoErrorMessage (hash) {
  if (typeof hash !== 'string' || !hash.startsWith('#sso_error=')) return null
  let q
  try {
    q = new URLSearchParams(hash.slice(1))
  } catch {
    return GENERAL
  }
  const code = q.get('sso_error') ?? ''
  const sentence = Object.hasOwn(SENTENCES, code) ? SENTENCES[code] : undefined
  if (sentence === undefined) return GENERAL
  const value = q.get('value') ?? ''
  const claim = q.get('claim') === 'email' ? 'the email' : 'the subject'
  const by = VALUE.test(value) ? `${claim} "${value}"` : 'the account you signed in with'
  const seconds = q.get('retry') ?? ''
  const retry = RETRY.test(seconds) ? `in ${seconds} s` : 'later'
  return sentence({ by, retry })
}
