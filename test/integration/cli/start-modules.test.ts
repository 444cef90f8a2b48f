/**
 * What the real `keygate` executable loads to start a command that is not `serve`: none of
 * the gateway's own packages (fastify, undici, prom-client, OpenTelemetry, pino, gRPC,
 * OpenID), which only `serve` (and `config check --connect`, undici) needs. Every CLI
 * run pays its start-up: each of these packages is tens to hundreds of files read and
 * compiled before the command does anything. And what `serve` itself loads with the
 * features that are off by default left off: none of their packages (span export,
 * OpenID, signed assertions, pretty logs), each of them heap and RSS for nothing
 * (docs/cache.md, Memory). The modules are read off Node's own resolution
 * (module.registerHooks), as each command resolves them.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runCli } from '../../helpers/cli.js'
import { startGatewayProcess } from '../../helpers/gateway-process.js'
import { uniquePrefix, startRedis } from '../../helpers/redis.js'
import { startUpstream } from '../../helpers/upstream.js'

const SHIPPED_CONFIG = fileURLToPath(new URL('../../../config/keygate.yaml', import.meta.url))

/** packages only the gateway (serve) loads */
const GATEWAY_ONLY = [
  'fastify', '@fastify/', 'undici', 'prom-client', '@opentelemetry/', 'pino', '@grpc/', 'openid-client', 'jose'
]

const dir = mkdtempSync(join(tmpdir(), 'keygate-start-modules-'))
const hook = join(dir, 'record.mjs')
writeFileSync(hook, `
import { registerHooks } from 'node:module'
import { appendFileSync } from 'node:fs'
registerHooks({
  resolve (specifier, context, next) {
    const resolved = next(specifier, context)
    appendFileSync(process.env.RECORD_TO, resolved.url + '\\n')
    return resolved
  }
})
`)

/** packages `serve` loads only for a feature that is off by default */
const FEATURE_ONLY = [
  '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/resources', '@opentelemetry/semantic-conventions', 'openid-client', 'jose', 'pino-pretty'
]

/** the packages named in a recording, by name */
function packagesIn (record: string): Set<string> {
  const packages = new Set<string>()
  for (const url of readFileSync(record, 'utf8').split('\n')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
    if (m?.[1] !== undefined) packages.add(m[1])
  }
  return packages
}

/** a new, empty recording named `name`, and the environment that makes a process write it */
function recording (name: string): { record: string, env: Record<string, string> } {
  const record = join(dir, `${name}.txt`)
  writeFileSync(record, '')
  return { record, env: { NODE_OPTIONS: `--import ${hook}`, RECORD_TO: record } }
}

/** the packages a CLI run loaded, by name */
async function packagesLoaded (args: string[]): Promise<{ code: number | null, packages: Set<string> }> {
  const { record, env } = recording(args.join('-').replace(/[^a-z-]/gi, ''))
  const run = await runCli(args, env)
  return { code: run.code, packages: packagesIn(record) }
}

for (const args of [['--version'], ['--help'], ['config', 'check', SHIPPED_CONFIG]]) {
  t.test(`keygate ${args.join(' ')} loads none of the gateway's packages`, async (t) => {
    const { code, packages } = await packagesLoaded(args)
    t.equal(code, 0)
    t.ok(packages.has('commander'), 'the recording sees the packages the command loads')
    const gatewayOnly = [...packages].filter((p) => GATEWAY_ONLY.some((g) => g.endsWith('/') ? p.startsWith(g) : p === g))
    t.same(gatewayOnly, [], 'no package only the gateway needs')
  })
}

t.test('keygate serve with the default features loads none of the packages of those that are off', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const upstream = await startUpstream()
  t.teardown(() => upstream.close())
  const { record, env } = recording('serve')
  const gw = await startGatewayProcess(t, {
    name: 'serve',
    redisUrl: redis.url,
    prefix: uniquePrefix(),
    upstreamUrl: upstream.url,
    env
  })
  const packages = packagesIn(record)
  t.ok(packages.has('fastify') && packages.has('@opentelemetry/core'),
    'the recording sees what serve loads (fastify; OpenTelemetry\'s core, for the trace context every request reads)')
  t.same([...packages].filter((p) => FEATURE_ONLY.includes(p)), [], 'no package of a feature that is off')
  t.equal(await gw.stop(), 0, 'serve stopped cleanly')
})
