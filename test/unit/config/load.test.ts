import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { loadConfig, parseConfig } from '../../../src/config/load.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

t.test('the shipped config/keygate.yaml is valid and spells out the defaults', async (t) => {
  const c = loadConfig(fileURLToPath(new URL('../../../config/keygate.yaml', import.meta.url)), {})
  t.equal(c.listen, '0.0.0.0:8080')
  t.equal(c.admin_listen, '127.0.0.1:8081')
  t.equal(c.redis.prefix, 'keygate:')
  t.equal(c.keys.prefix, 'kg_')
  t.equal(c.identity.header_prefix, 'X-Auth-')
  t.equal(c.identity.forward_authorization, false)
  t.equal(c.cache.stale_if_error_s, 30)
  t.equal(c.limits.body_bytes, 10485760)
  t.same(c.trusted_proxies, [])
})

t.test('defaults fill what the file leaves out, upstreams included', async (t) => {
  const c = parseConfig(MINIMAL_CONFIG)
  t.equal(c.upstreams.core?.timeout_ms, 30000)
  t.equal(c.redis.url, 'redis://127.0.0.1:6379')
})

t.test('the environment overrides the file', async (t) => {
  const c = parseConfig(MINIMAL_CONFIG, { KEYGATE_REDIS_URL: 'redis://:secret@10.0.0.1:6380', KEYGATE_LISTEN: '127.0.0.1:9000', KEYGATE_ADMIN_LISTEN: '127.0.0.1:9001' })
  t.equal(c.redis.url, 'redis://:secret@10.0.0.1:6380')
  t.equal(c.listen, '127.0.0.1:9000')
  t.equal(c.admin_listen, '127.0.0.1:9001')
  t.match(configProblems(MINIMAL_CONFIG, { KEYGATE_LISTEN: 'nonsense' }), [/^listen: must be host:port/])
})

t.test('every problem is reported at once, each naming its field', async (t) => {
  const found = configProblems(`
listen: 8080
redis: { url: "redis://user:pw@host:6379", prefx: "x" }
upstreams: { core: { url: "http://127.0.0.1:3000/base", timeout_ms: -1 } }
routes: [{ prefix: /api/v1, upstream: core }]
rules: [{ method: get, path: /api/v1/users }]
`)
  t.match(found.join('\n'), /redis\.url: must not hold a password/)
  t.match(found.join('\n'), /^listen: /m)
  t.match(found.join('\n'), /redis\.prefx: unknown field/)
  t.match(found.join('\n'), /upstreams\.core\.url: must be origin of the upstream/)
  t.match(found.join('\n'), /upstreams\.core\.timeout_ms/)
  t.match(found.join('\n'), /rules\[0\]\.method: must be an HTTP method/)
})

t.test('cross-field problems: references, rule placement, ambiguity, trusted proxies', async (t) => {
  const found = configProblems(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
routes: [{ prefix: /api/v1, upstream: core }, { prefix: /api/v2, upstream: nope }, { prefix: /api/v1, upstream: core }]
rules:
  - { method: GET, path: /api/v1/users/:id }
  - { method: GET, path: /api/v1/users/:uid }
  - { method: GET, path: /elsewhere }
trusted_proxies: ["10.0.0.0/8", "10.0.0.0/33", "not-an-ip"]
`).join('\n')
  t.match(found, /routes\[1\]\.upstream: no upstream named "nope"/)
  t.match(found, /routes\[2\]\.prefix: \/api\/v1 is listed twice/)
  t.match(found, /rules\[1\]: ambiguous with rules\[0\]/)
  t.match(found, /rules\[2\]\.path: \/elsewhere is under no route prefix/)
  t.match(found, /trusted_proxies\[1\]: .*invalid prefix length/)
  t.match(found, /trusted_proxies\[2\]: .*not an IP address/)
  t.notMatch(found, /trusted_proxies\[0\]/)
})

t.test('YAML syntax errors and a missing file are configuration errors', async (t) => {
  t.match(configProblems('routes: [\n'), [/^YAML: /])
  t.throws(() => loadConfig('/nonexistent/keygate.yaml', {}), { name: 'ConfigError', message: /cannot read the file/ })
})

t.test('the authorizer listener: off by default, KEYGATE_AUTHZ_LISTEN, its peers and prefix checked', async (t) => {
  const off = parseConfig(MINIMAL_CONFIG)
  t.equal(off.authz_listen, undefined, 'off unless set')
  t.same(off.authz.trusted_peers, ['127.0.0.0/8', '::1'], 'loopback by default')
  t.equal(off.authz.path_prefix, '')
  t.equal(parseConfig(MINIMAL_CONFIG, { KEYGATE_AUTHZ_LISTEN: '127.0.0.1:8082' }).authz_listen, '127.0.0.1:8082')

  const found = configProblems(MINIMAL_CONFIG + `
authz_listen: "127.0.0.1:8081"
authz: { trusted_peers: ["10.0.0.0/8", "fd00::/129", "nope"] }
`).join('\n')
  t.match(found, /admin_listen: 127\.0\.0\.1:8081 is also authz_listen/, 'two listeners on one address')
  t.match(found, /authz\.trusted_peers\[1\]: .*invalid prefix length/)
  t.match(found, /authz\.trusted_peers\[2\]: .*not an IP address/)
  t.notMatch(found, /authz\.trusted_peers\[0\]/)
  t.match(configProblems(MINIMAL_CONFIG + 'authz: { path_prefix: "/ext-authz/" }\n'), [/^authz\.path_prefix: must be empty, or a path prefix/])
  t.same(configProblems(MINIMAL_CONFIG + 'listen: "127.0.0.1:0"\nadmin_listen: "127.0.0.1:0"\nauthz_listen: "127.0.0.1:0"\n'), [], 'port 0 (any free port) is no clash')
})

t.test('the gRPC authorizer listener: off by default, KEYGATE_AUTHZ_GRPC_LISTEN, its address and TLS checked', async (t) => {
  const off = parseConfig(MINIMAL_CONFIG)
  t.equal(off.authz_grpc_listen, undefined, 'off unless set')
  t.equal(off.authz_grpc.tls, undefined, 'plaintext unless TLS is set')
  t.equal(parseConfig(MINIMAL_CONFIG, { KEYGATE_AUTHZ_GRPC_LISTEN: '0.0.0.0:8083' }).authz_grpc_listen, '0.0.0.0:8083')
  const found = configProblems(MINIMAL_CONFIG + 'authz_listen: "127.0.0.1:8082"\nauthz_grpc_listen: "127.0.0.1:8082"\n').join('\n')
  t.match(found, /authz_grpc_listen: 127\.0\.0\.1:8082 is also authz_listen/, 'two listeners on one address')
  t.match(configProblems(MINIMAL_CONFIG + 'authz_grpc_listen: "nope"\n').join('\n'), /^authz_grpc_listen: /m)
  t.match(configProblems(MINIMAL_CONFIG + 'authz_grpc: { tls: { cert_file: /c.pem } }\n').join('\n'), /authz_grpc\.tls\.key_file/,
    'a certificate without its key')
  t.match(configProblems(MINIMAL_CONFIG + 'authz_grpc: { tls: { cert_file: /c.pem, key_file: /k.pem, ca: x } }\n').join('\n'),
    /authz_grpc\.tls\.ca: unknown field/)
  const tls = parseConfig(MINIMAL_CONFIG + 'authz_grpc: { tls: { cert_file: /c.pem, key_file: /k.pem, client_ca_file: /ca.pem } }\n')
  t.same(tls.authz_grpc.tls, { cert_file: '/c.pem', key_file: '/k.pem', client_ca_file: '/ca.pem' })
})

t.test('tracing: off by default, its keys and their KEYGATE_TRACING_* overrides checked', async (t) => {
  const c = parseConfig(MINIMAL_CONFIG)
  t.equal(c.tracing.otlp_endpoint, undefined, 'no endpoint: no span is exported')
  t.equal(c.tracing.sample_ratio, 1)
  t.equal(c.tracing.parent_based, true)
  t.equal(c.tracing.service_name, 'keygate')
  const e = parseConfig(MINIMAL_CONFIG + 'tracing: { otlp_endpoint: "http://collector:4318/v1/traces", sample_ratio: 0.5 }\n', {
    KEYGATE_TRACING_SAMPLE_RATIO: '0.25',
    KEYGATE_TRACING_SERVICE_NAME: 'edge'
  })
  t.equal(e.tracing.otlp_endpoint, 'http://collector:4318/v1/traces')
  t.equal(e.tracing.sample_ratio, 0.25, 'the variable wins')
  t.equal(e.tracing.service_name, 'edge')
  t.equal(parseConfig(MINIMAL_CONFIG, { KEYGATE_TRACING_OTLP_ENDPOINT: 'https://otel.example.com/v1/traces' }).tracing.otlp_endpoint, 'https://otel.example.com/v1/traces')
  t.match(configProblems(MINIMAL_CONFIG, { KEYGATE_TRACING_SAMPLE_RATIO: 'half' }), [/^tracing\.sample_ratio: /])
  t.match(configProblems(MINIMAL_CONFIG, { KEYGATE_TRACING_SAMPLE_RATIO: '1.5' }), [/^tracing\.sample_ratio: /])
  t.match(configProblems(MINIMAL_CONFIG + 'tracing: { otlp_endpoint: "collector:4318" }\n'), [/^tracing\.otlp_endpoint: must be an http/])
  t.match(configProblems(MINIMAL_CONFIG + 'tracing: { otlp_endpoint: "http://user:pass@collector:4318/v1/traces" }\n'), [/^tracing\.otlp_endpoint: /], 'no credentials in the URL')
  t.match(configProblems(MINIMAL_CONFIG + 'tracing: { exporter: x }\n'), [/^tracing\.exporter: unknown field/])
})

t.test('tracing.protocol: JSON by default, protobuf when asked, anything else named by config check', async (t) => {
  t.equal(parseConfig(MINIMAL_CONFIG).tracing.protocol, 'http/json', 'what every OTLP/HTTP receiver reads')
  t.equal(parseConfig(MINIMAL_CONFIG + 'tracing: { protocol: http/protobuf }\n').tracing.protocol, 'http/protobuf')
  t.equal(parseConfig(MINIMAL_CONFIG + 'tracing: { protocol: http/json }\n', { KEYGATE_TRACING_PROTOCOL: 'http/protobuf' }).tracing.protocol, 'http/protobuf', 'the variable wins')
  t.match(configProblems(MINIMAL_CONFIG + 'tracing: { protocol: grpc }\n'), [/^tracing\.protocol: must be one of "http\/protobuf", "http\/json", got "grpc"/])
  t.match(configProblems(MINIMAL_CONFIG, { KEYGATE_TRACING_PROTOCOL: 'json' }), [/^tracing\.protocol: must be one of /])
})

// The configuration stands below the parts it configures.
const CONFIG_DIR = new URL('../../../src/config/', import.meta.url)

t.test('the configuration imports nothing above it: packages, node and src/config/ only', async (t) => {
  for (const file of readdirSync(CONFIG_DIR).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(new URL(file, CONFIG_DIR), 'utf8')
    const specifiers = [...text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1] as string)
    t.same(specifiers.filter((s) => s.startsWith('.') && !s.startsWith('./')), [], `${file}: no import from outside src/config/`)
  }
})
