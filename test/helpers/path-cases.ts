/**
 * The request targets of the path policy (docs/security.md, "Requests"), shared by the data
 * plane's suite (test/integration/data-plane/path-policy.test.ts) and the authorizer's, which
 * sends the same targets inside X-Forwarded-Uri / X-Original-URI and as Envoy's own.
 */

/** [name, method, target]: each gets 400 bad_request and never reaches an upstream. */
export const REFUSED_TARGETS: ReadonlyArray<[string, string, string | Buffer]> = [
  // dot segments, in every spelling
  ['dot-dot segment', 'GET', '/api/v1/../admin'],
  ['dot segment', 'GET', '/api/v1/./x'],
  ['encoded dot-dot (lower case)', 'GET', '/api/v1/%2e%2e/x'],
  ['encoded dot-dot (mixed case)', 'GET', '/api/v1/%2E%2e/x'],
  ['half-encoded dot-dot', 'GET', '/api/v1/.%2e/x'],
  ['half-encoded dot-dot, other half', 'GET', '/api/v1/%2e./x'],
  ['encoded single dot', 'GET', '/api/v1/%2e/x'],
  ['trailing dot-dot segment', 'GET', '/api/v1/x/..'],
  // not dot segments, but segments starting or ending with `..` are refused too, up front:
  // common proxies will not forward them (docs/security.md)
  ['three dots', 'GET', '/api/v1/.../x'],
  ['a segment starting with two dots', 'GET', '/api/v1/..foo'],
  ['a segment ending with two dots', 'GET', '/api/v1/foo../x'],
  ['trailing dot segment', 'GET', '/api/v1/x/.'],
  ['double-encoded dot-dot', 'GET', '/api/v1/%252e%252e/x'],
  ['dot-dot climbing out of the prefix', 'GET', '/api/v1/../../etc/passwd'],
  // empty segments
  ['empty segment', 'GET', '/api/v1//x'],
  ['empty segment after the root', 'GET', '//api/v1/x'],
  // encoded separators and backslashes
  ['encoded slash (upper case)', 'GET', '/api/v1/a%2Fb'],
  ['encoded slash (lower case)', 'GET', '/api/v1/a%2fb'],
  ['encoded backslash (upper case)', 'GET', '/api/v1/a%5Cb'],
  ['encoded backslash (lower case)', 'GET', '/api/v1/a%5cb'],
  ['raw backslash', 'GET', '/api/v1/a\\b'],
  ['raw backslash dot-dot', 'GET', '/api/v1/..\\admin'],
  // path parameters
  ['semicolon', 'GET', '/api/v1/a;b'],
  ['jsessionid path parameter', 'GET', '/api/v1/users;jsessionid=1'],
  ['semicolon dot-dot (Tomcat style)', 'GET', '/api/v1/..;/admin'],
  // NUL and control characters, encoded
  ['encoded NUL', 'GET', '/api/v1/%00'],
  ['encoded NUL mid-segment', 'GET', '/api/v1/users%00.json'],
  ['encoded line feed', 'GET', '/api/v1/a%0Ab'],
  ['encoded carriage return', 'GET', '/api/v1/a%0db'],
  ['encoded tab', 'GET', '/api/v1/a%09b'],
  ['encoded DEL', 'GET', '/api/v1/a%7Fb'],
  // invalid percent-encoding
  ['non-hex escape', 'GET', '/api/v1/%zz'],
  ['truncated escape', 'GET', '/api/v1/%4'],
  ['lone percent', 'GET', '/api/v1/100%'],
  // not origin-form
  ['absolute-form', 'GET', 'http://evil.example/api/v1/users'],
  ['absolute-form to the gateway itself', 'GET', 'http://localhost/api/v1/users'],
  ['asterisk-form', 'OPTIONS', '*'],
  ['authority-form with GET', 'GET', 'localhost:80'],
  ['relative target', 'GET', 'api/v1/users'],
  // raw control characters (node's parser refuses some itself; either way: 400, not forwarded)
  ['raw NUL', 'GET', Buffer.from('/api/v1/a\x00b', 'latin1')],
  ['raw SOH', 'GET', Buffer.from('/api/v1/a\x01b', 'latin1')],
  ['raw tab', 'GET', Buffer.from('/api/v1/a\tb', 'latin1')],
  ['raw form feed', 'GET', Buffer.from('/api/v1/a\x0cb', 'latin1')],
  ['raw escape', 'GET', Buffer.from('/api/v1/a\x1bb', 'latin1')],
  ['raw DEL', 'GET', Buffer.from('/api/v1/a\x7fb', 'latin1')],
  ['raw C1 control (NEL, one byte)', 'GET', Buffer.from('/api/v1/a\x85b', 'latin1')],
  ['raw C1 control (NEL, UTF-8)', 'GET', Buffer.from('/api/v1/a\xc2\x85b', 'latin1')]
]

/** [name, target, what the upstream receives]: forwarded, unreserved escapes decoded once. */
export const ACCEPTED_TARGETS: ReadonlyArray<[string, string, string]> = [
  ['a plain path', '/api/v1/users', '/api/v1/users'],
  ['an encoded unreserved letter in the route prefix', '/ap%69/v1/users', '/api/v1/users'],
  ['an encoded unreserved letter, upper-case hex', '/api/v1/%55sers', '/api/v1/Users'],
  ['encoded unreserved punctuation', '/api/v1/%7Ea%2Db%5Fc%2Ed', '/api/v1/~a-b_c.d'],
  ['encoded digits', '/api/v1/v%31', '/api/v1/v1'],
  ['UTF-8 escapes (upper-case hex) stay encoded', '/api/v1/caf%C3%A9', '/api/v1/caf%C3%A9'],
  ['UTF-8 escapes (lower-case hex) stay as sent', '/api/v1/caf%c3%a9', '/api/v1/caf%c3%a9'],
  ['an encoded space stays encoded', '/api/v1/a%20b', '/api/v1/a%20b'],
  ['a dot inside a segment is no dot segment', '/api/v1/file.json', '/api/v1/file.json'],
  ['sub-delimiters allowed in a segment', "/api/v1/a!$&'()*+,=:@b", "/api/v1/a!$&'()*+,=:@b"],
  ['the query string exactly as received', '/api/v1/users?a=1&a=2&b=%2F&c=hello+world&d', '/api/v1/users?a=1&a=2&b=%2F&c=hello+world&d'],
  ['a query is not path-normalised', '/api/v1/users?next=/../admin//x&e=%2e%2e', '/api/v1/users?next=/../admin//x&e=%2e%2e'],
  ['unreserved escapes in the query are not decoded', '/api/v1/users?q=%61%62', '/api/v1/users?q=%61%62'],
  ['decoding the path leaves the query alone', '/api/v1/%75sers?x=%75', '/api/v1/users?x=%75']
]

/**
 * [name, target]: targets that decode to /api/v1/users; the rule for that path must
 * decide (read undecoded, they would fall to a permission-free catch-all rule).
 */
export const DECODED_RULE_TARGETS: ReadonlyArray<[string, string]> = [
  ['an escape inside the rule segment', '/api/v1/us%65rs'],
  ['the whole segment encoded', '/api/v1/%75%73%65%72%73'],
  ['an escape inside the route prefix', '/%61pi/v1/users']
]
