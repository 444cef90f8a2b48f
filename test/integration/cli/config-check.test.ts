/**
 * `keygate config check` (the real executable) lists every problem of a file in one
 * run: the schema's (an unknown field, an enumeration with its allowed values, an
 * out-of-range port) and the checks across fields (an unknown upstream, an unknown
 * method, ambiguous rules, an org_param that is no parameter), each with its path;
 * in text on stderr and, with --json, as JSON on stdout. `serve` refuses the same file
 * with the same list.
 */
import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli } from '../../helpers/cli.js'

const BROKEN = `
listen: "0.0.0.0:80800"
upstreams:
  core: { url: "http://127.0.0.1:3000" }
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /api/v2, upstream: nosuch }
rules:
  - { method: GET, path: /api/v1/users, permissions: [users:read] }
  - { method: GET, path: /api/v1/users, permissions: [users:write] }
  - { method: FETCH, path: /api/v1/things }
  - { method: GET, path: "/api/v1/orgs/:org", org_param: organisation }
rate_limits: { on_error: maybe }
colour: blue
`

/** Each problem: its path, and what the message must say. */
const EXPECTED: Array<[string, RegExp]> = [
  ['listen', /^listen: port 80800 is out of range \(0 to 65535\)/],
  ['rate_limits.on_error', /^rate_limits\.on_error: must be one of "allow", "deny", got "maybe"$/],
  ['colour', /^colour: unknown field$/],
  ['routes[1].upstream', /^routes\[1\]\.upstream: no upstream named "nosuch" in upstreams \(defined: core\)$/],
  ['rules[1]', /^rules\[1\]: ambiguous with rules\[0\]/],
  ['rules[2].method', /^rules\[2\]\.method: unknown HTTP method "FETCH" \(one of .*GET.*, or \*\)$/],
  ['rules[3].org_param', /^rules\[3\]\.org_param: "organisation" is not a parameter of path \/api\/v1\/orgs\/:org$/]
]

const file = join(mkdtempSync(join(tmpdir(), 'keygate-config-check-')), 'keygate.yaml')
writeFileSync(file, BROKEN)

t.test('text: every problem in one run, each with its path', async (t) => {
  const run = await runCli(['config', 'check', file], {})
  t.equal(run.code, 1)
  const problems = run.stderr.split('\n').filter((l) => l.startsWith('  - ')).map((l) => l.slice(4))
  t.equal(problems.length, EXPECTED.length, `exactly the ${EXPECTED.length} problems:\n${run.stderr}`)
  for (const [path, message] of EXPECTED) t.ok(problems.some((p) => message.test(p)), `${path} is listed`)
  t.notMatch(run.stderr, /Expected union value/, 'an enumeration names its values')
})

t.test('--json: the same problems, as JSON on stdout', async (t) => {
  const run = await runCli(['config', 'check', file, '--json'], {})
  t.equal(run.code, 1)
  const out = JSON.parse(run.stdout) as { ok: boolean, file: string, problems: string[] }
  t.equal(out.ok, false)
  t.equal(out.file, file)
  t.equal(out.problems.length, EXPECTED.length)
  for (const [path, message] of EXPECTED) t.ok(out.problems.some((p) => message.test(p)), `${path} is listed`)
})

t.test('serve refuses the file with the same list', async (t) => {
  const run = await runCli(['serve'], { KEYGATE_CONFIG: file, KEYGATE_REDIS_URL: 'redis://127.0.0.1:1' })
  t.equal(run.code, 1)
  for (const [path, message] of EXPECTED) t.ok(run.stderr.split('\n').some((l) => message.test(l.replace(/^ {2}- /, ''))), `${path} is listed`)
})

t.test('addresses: ports in range, IP literals well formed', async (t) => {
  const cases: Array<[string, RegExp | undefined]> = [
    ['0.0.0.0:8080', undefined],
    ['[::1]:8080', undefined],
    ['localhost:0', undefined],
    ['0.0.0.0:65535', undefined],
    ['0.0.0.0:65536', /^listen: port 65536 is out of range/],
    ['999.1.1.1:8080', /^listen: "999\.1\.1\.1" is not an IPv4 address/],
    ['[::zz]:8080', /^listen: must be host:port/]
  ]
  for (const [listen, expected] of cases) {
    const f = join(mkdtempSync(join(tmpdir(), 'keygate-config-check-')), 'keygate.yaml')
    writeFileSync(f, JSON.stringify({ listen, upstreams: { core: { url: 'http://127.0.0.1:3000' } }, routes: [{ prefix: '/api', upstream: 'core' }] }))
    const run = await runCli(['config', 'check', f, '--json'], {})
    const out = JSON.parse(run.stdout) as { ok: boolean, problems?: string[] }
    if (expected === undefined) t.equal(run.code, 0, `${listen} is accepted (${run.stdout})`)
    else t.match(out.problems, [expected], `${listen} is refused`)
  }
})
