/**
 * Security review, finding 7: the console showed on its sign-in page whatever text a
 * link carried in `#sso_error=`, so a link to keygate's own console could put an
 * attacker's words ("your account is locked, call ...") on keygate's page.
 *
 * keygate sends a code (and the claim's value, or the seconds to wait); the console shows
 * a fixed sentence per code, the general one for a code it does not know, and a value
 * only as one quoted token of printable characters. The page itself is checked in a
 * browser in test/browser/console-sso.test.ts.
 */
import t from 'tap'
import { ssoErrorMessage } from '../../console/sso-errors.js'
import { failureFragment } from '../../src/admin/sso/routes.js'

const GENERAL = 'the sign-in did not succeed; sign in again'

t.test('the console shows its own sentences, never a link\'s text', async (t) => {
  const crafted: Array<[string, string, string]> = [
    ['#sso_error=Your%20account%20is%20locked.%20Call%200800%20123', GENERAL, 'words in place of a code'],
    ['#sso_error=toString', GENERAL, 'a name every object has'],
    ['#sso_error=__proto__', GENERAL, 'a prototype name'],
    ['#sso_error=%E0%A4%A', GENERAL, 'a malformed escape'],
    ['#sso_error=no_user&claim=sub&value=locked%2C%20call%200800%20123',
      'no keygate user matches the account you signed in with', 'a value holding words'],
    ['#sso_error=no_user&claim=sub&value=' + 'a'.repeat(300),
      'no keygate user matches the account you signed in with', 'a value too long for any claim'],
    ['#sso_error=no_user&claim=sub&value=a%0Ab', 'no keygate user matches the account you signed in with',
      'a value holding a line break'],
    ['#sso_error=too_many_sign_ins&retry=call%20us', 'too many sign-ins at once; try again later', 'a retry of words'],
    ['#other', '', 'no SSO error']
  ]
  for (const [hash, want, label] of crafted) t.equal(ssoErrorMessage(hash) ?? '', want, label)
})

t.test('what keygate sends reads as keygate wrote it', async (t) => {
  const sent: Array<[string, string]> = [
    [failureFragment('no_user', { claim: { claim: 'sub', value: 'mallory' } }),
      'no keygate user matches the subject "mallory"'],
    [failureFragment('email_unverified', { claim: { claim: 'email', value: 'erin@example.com' } }),
      'the identity provider does not report the email "erin@example.com" as verified'],
    [failureFragment('too_many_sign_ins_here', { retry: 42 }), 'too many sign-ins from this address; try again in 42 s'],
    [failureFragment('no_login'), 'the sign-in expired or was already used; sign in again'],
    [failureFragment('provider_unreachable'), 'the identity provider cannot be reached; try again later']
  ]
  for (const [fragment, want] of sent) t.equal(ssoErrorMessage(`#${fragment}`), want, fragment)
})
