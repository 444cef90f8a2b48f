import t from 'tap'
import { checkTarget } from '../../../src/decision/target-policy.js'

const refused: Array<[string, string]> = [
  ['http://evil.example/api/v1/users', 'absolute-form'],
  ['*', 'asterisk-form'],
  ['api/v1/users', 'no leading slash'],
  ['/api/v1/../admin', 'dot-dot segment'],
  ['/api/v1/./x', 'dot segment'],
  ['/api/v1/x/..', 'trailing dot-dot'],
  ['/api/v1/x/.', 'trailing dot'],
  ['/api/v1/%2e%2e/x', 'encoded dot-dot'],
  ['/api/v1/%2E%2e/x', 'encoded dot-dot, mixed case'],
  ['/api/v1/.%2e/x', 'half-encoded dot-dot'],
  ['/api/v1/%2e/x', 'encoded dot'],
  ['/api/v1/%252e%252e/x', 'double-encoded dot-dot'],
  ['/api/v1/a%252fb', 'double-encoded slash'],
  ['/api/v1//x', 'empty segment'],
  ['//api/v1/x', 'leading empty segment'],
  ['/api/v1/a%2Fb', 'encoded slash'],
  ['/api/v1/a%2fb', 'encoded slash, lower case'],
  ['/api/v1/a%5Cb', 'encoded backslash'],
  ['/api/v1/a%5cb', 'encoded backslash, lower case'],
  ['/api/v1/a\\b', 'raw backslash'],
  ['/api/v1/a;b', 'semicolon'],
  ['/api/v1/users;jsessionid=1', 'path parameter'],
  ['/api/v1/%00', 'encoded NUL'],
  ['/api/v1/a%0Ab', 'encoded LF'],
  ['/api/v1/a%7Fb', 'encoded DEL'],
  ['/api/v1/a\x01b', 'raw control character'],
  ['/api/v1/%zz', 'invalid escape'],
  ['/api/v1/%4', 'truncated escape'],
  ['/api/v1/%', 'lone percent'],
  ['/api/v1/%FF', 'escape that is not UTF-8'],
  ['/api/v1/a b', 'space'],
  ['/api/v1/a"b', 'double quote'],
  ['/api/v1/a{b}', 'braces'],
  ['/api/v1/caf\u00e9', 'raw non-ASCII'],
  ['/api/v1/users?a#b', 'fragment'],
  ['/api/v1/users?a\x7fb', 'control character in the query'],
  ['/api/v1/...', 'a segment of dots (refused with reply-from, which forwards no segment starting or ending with ..)'],
  ['/api/v1/..foo', 'a segment starting with ..'],
  ['/api/v1/foo../x', 'a segment ending with ..'],
  ['/api/v1/foo..', 'the last segment ending with ..'],
  ['/api/v1/foo%2E%2e', 'the last segment ending with .., encoded'],
  ['/api/v1/%2E%2Efoo', 'an encoded segment starting with ..']
]

for (const [target, why] of refused) {
  t.test(`refuses ${why}: ${JSON.stringify(target)}`, async (t) => {
    t.equal(checkTarget(target).ok, false)
  })
}

const accepted: Array<[string, string, string]> = [
  ['/', '/', ''],
  ['/api/v1/users', '/api/v1/users', ''],
  ['/api/v1/users/', '/api/v1/users/', ''],
  ['/ap%69/v1/users', '/api/v1/users', ''],
  ['/api/v1/%7Euser', '/api/v1/~user', ''],
  ['/api/v1/caf%C3%A9', '/api/v1/caf%C3%A9', ''],
  ['/api/v1/a%20b', '/api/v1/a%20b', ''],
  ['/api/v1/a%3Bb', '/api/v1/a%3Bb', ''],
  ['/api/v1/100%25', '/api/v1/100%25', ''],
  ['/api/v1/.well-known', '/api/v1/.well-known', ''],
  ['/api/v1/a:b@c!$&\'()*+,=', '/api/v1/a:b@c!$&\'()*+,=', ''],
  ['/api/v1/users?a=1&a=2&b=%2F&c=hello+world&d', '/api/v1/users', '?a=1&a=2&b=%2F&c=hello+world&d'],
  ['/api/v1/users?', '/api/v1/users', '?']
]

for (const [target, path, query] of accepted) {
  t.test(`accepts ${JSON.stringify(target)} as ${JSON.stringify(path + query)}`, async (t) => {
    t.same(checkTarget(target), { ok: true, path, query })
  })
}

t.test('an accepted path survives WHATWG URL parsing unchanged (reply-from parses it so)', async (t) => {
  for (const [target] of accepted) {
    const r = checkTarget(target)
    if (!r.ok) { t.fail(target); continue }
    t.equal(new URL(r.path, 'http://upstream.test').pathname, r.path, target)
  }
})
