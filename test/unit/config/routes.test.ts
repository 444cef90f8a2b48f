// The routes' checks (src/config/routes.ts, src/config/rule-patterns.ts): one run of
// `keygate config check` lists every problem of hosts, rewrites, key headers and public rules.
import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { configProblems } from '../../helpers/config.js'

t.test('a config with every route problem lists each', async (t) => {
  const problems = configProblems(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
identity: { header_prefix: X-Auth- }
rate_limits: { anonymous: lots }
routes:
  - { prefix: /a, upstream: core, hosts: [a.example.com] }
  - { prefix: /a, upstream: core, hosts: [A.example.com] }
  - { prefix: /b, upstream: core, strip_prefix: true, rewrite_prefix: /v2 }
  - { prefix: /c, upstream: core, rewrite_prefix: /v2/.. }
  - { prefix: /d/.., upstream: core }
  - { prefix: /e, upstream: core, key_header: Authorization }
  - { prefix: /f, upstream: core, key_header: X-Auth-Key }
  - { prefix: /g, upstream: core, hosts: ["bad host", "*.*.example.com", "a.example.com:80"] }
  - { prefix: /h, upstream: core, hosts: [] }
  - { prefix: /i, upstream: core, key_header: "api key" }
  - { prefix: /j, upstream: nowhere }
rules:
  - { method: GET, path: /a/x, public: true, permissions: [a:read] }
  - { method: GET, path: /a/:org/y, public: true, org_param: org }
  - { method: GET, path: /a/z, public: yes }
`)
  const expected = [
    /^routes\[1\]\.hosts: \/a for host A\.example\.com is listed twice \(routes\[0\] too\)$/,
    /^routes\[2\]: strip_prefix and rewrite_prefix both set/,
    /^routes\[3\]\.rewrite_prefix: \/v2\/\.\. holds the segment "\.\."/,
    /^routes\[4\]\.prefix: \/d\/\.\. holds the segment "\.\."/,
    /^routes\[5\]\.key_header: Authorization is a header the gateway reads or sets itself/,
    /^routes\[6\]\.key_header: X-Auth-Key is a header the gateway reads or sets itself/,
    /^routes\[7\]\.hosts\[0\]: must be a host name/,
    /^routes\[7\]\.hosts\[1\]: must be a host name/,
    /^routes\[7\]\.hosts\[2\]: must be a host name/,
    /^routes\[8\]\.hosts: /,
    /^routes\[9\]\.key_header: must be a header name/,
    /^routes\[10\]\.upstream: no upstream named "nowhere"/,
    /^rules\[0\]\.public: a public rule lets requests through without a key, so it takes no permissions or org_param$/,
    /^rules\[1\]\.public: /,
    /^rules\[2\]\.public: /,
    /^rate_limits\.anonymous: must be a rate limit/
  ]
  for (const re of expected) t.ok(problems.some((p) => re.test(p)), `listed: ${re.source}`)
})

t.test('a valid config with every option', async (t) => {
  const c = parseConfig(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
rate_limits: { anonymous: 10/1s }
routes:
  - { prefix: /a, upstream: core, hosts: [a.example.com, "*.example.com"], strip_prefix: true, key_header: apikey }
  - { prefix: /a, upstream: core }
  - { prefix: /b, upstream: core, rewrite_prefix: /v1/b }
rules:
  - { method: GET, path: /a/health, public: true }
  - { method: GET, path: /b/*, permissions: [] }
`)
  t.same(c.routes[0]?.hosts, ['a.example.com', '*.example.com'])
  t.equal(c.rules[0]?.public, true)
  t.equal(c.rate_limits.anonymous, '10/1s')
})
