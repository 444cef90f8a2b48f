/**
 * An upstream's fields across each other, and its TLS files, as `keygate config check`
 * reports them: every problem at once, each naming its field (src/config/upstreams.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { parseCheckDuration } from '../../../src/config/upstreams.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

const ROUTES = `routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /b, upstream: both }
  - { prefix: /n, upstream: none }
  - { prefix: /p, upstream: plain }
  - { prefix: /t, upstream: tls }
`

t.test('targets with their options parse, with the defaults of the check', async (t) => {
  const c = parseConfig(`
upstreams:
  core:
    targets: ["http://10.0.0.1:3300", "http://10.0.0.2:3300/"]
    balancing: least_requests
    health_check: { path: /health }
    passive: { failures: 5 }
routes: [{ prefix: /api/v1, upstream: core }]
`)
  const core = c.upstreams.core
  t.same(core?.targets, ['http://10.0.0.1:3300', 'http://10.0.0.2:3300/'])
  t.same(core?.health_check, { path: '/health', interval: '5s', timeout: '2s', unhealthy_after: 3, healthy_after: 2 })
  t.same(core?.passive, { failures: 5, ejection: '30s' })
})

t.test('a single url is as it was', async (t) => {
  const c = parseConfig(MINIMAL_CONFIG)
  const defaults = { timeout_ms: 30000, connect_timeout_ms: 5000, connections: 256 }
  t.same(c.upstreams.core, { url: 'http://127.0.0.1:3000', ...defaults })
})

t.test('every problem across upstream fields is listed at once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-upstreams-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const notPem = join(dir, 'not.pem')
  writeFileSync(notPem, 'hello\n')
  const found = configProblems(`
upstreams:
  core:
    targets: ["http://10.0.0.1:1", "http://10.0.0.1:1/"]
    health_check: { interval: 1s, timeout: 2s }
    balancing: fastest
  both: { url: "http://10.0.0.1:1", targets: ["http://10.0.0.2:1"] }
  none: { timeout_ms: 100 }
  plain: { url: "http://10.0.0.1:1", ca_file: /x.pem, health_check: { path: /h }, passive: { failures: 2 } }
  tls: { url: "https://10.0.0.1:1", ca_file: ${join(dir, 'missing.pem')}, client_cert_file: ${notPem} }
${ROUTES}`).join('\n')
  t.match(found, /upstreams\.core\.balancing: must be one of "round_robin", "least_requests", got "fastest"/)
  t.match(found, /upstreams\.core\.targets\[1\]: http:\/\/10\.0\.0\.1:1 is listed twice/)
  t.match(found, /upstreams\.core\.health_check\.timeout: must be shorter than the interval \(1s\), got 2s/)
  t.match(found, /upstreams\.both: has both url and targets; keep one/)
  t.match(found, /upstreams\.none: needs a url or a list of targets/)
  t.match(found, /upstreams\.plain\.ca_file: only an https:\/\/ upstream uses it/)
  t.match(found, /upstreams\.plain\.health_check: only an upstream with targets has it/)
  t.match(found, /upstreams\.plain\.passive: only an upstream with targets has it/)
  t.match(found, /upstreams\.tls\.client_key_file: mTLS needs both client_cert_file and client_key_file/)
  t.match(found, /upstreams\.tls\.ca_file: cannot read .*missing\.pem: ENOENT/)
  t.match(found, /upstreams\.tls\.client_cert_file: .*not\.pem holds no PEM block/)
  t.notMatch(found, /hello/, 'no file content in a message')
})

t.test('a check duration: ms, s or m', async (t) => {
  t.equal(parseCheckDuration('500ms'), 500)
  t.equal(parseCheckDuration('5s'), 5000)
  t.equal(parseCheckDuration('2m'), 120000)
  t.equal(parseCheckDuration('5h'), undefined)
  const zero = 'upstreams: { core: { targets: ["http://a:1"], health_check: { interval: 0s } } }\n' +
    'routes: [{ prefix: /a, upstream: core }]\n'
  t.match(configProblems(zero),
    [/upstreams\.core\.health_check\.interval: must be a duration above zero/])
})
