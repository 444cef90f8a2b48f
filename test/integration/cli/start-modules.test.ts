/**
 * What the real `keygate` executable loads to start a command that is not `serve`: none of
 * the gateway's own packages (fastify, undici, prom-client, OpenTelemetry, pino, gRPC,
 * OpenID), which only `serve` (and `config check --connect`, undici) needs. Every CLI
 * run pays its start-up: each of these packages is tens to hundreds of files read and
 * compiled before the command does anything. The modules are read off Node's own
 * resolution (module.registerHooks), as each command resolves them.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runCli } from '../../helpers/cli.js'

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

/** the packages a CLI run loaded, by name */
async function packagesLoaded (args: string[]): Promise<{ code: number | null, packages: Set<string> }> {
  const record = join(dir, `${args.join('-').replace(/[^a-z-]/gi, '')}.txt`)
  writeFileSync(record, '')
  const run = await runCli(args, { NODE_OPTIONS: `--import ${hook}`, RECORD_TO: record })
  const packages = new Set<string>()
  for (const url of readFileSync(record, 'utf8').split('\n')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
    if (m?.[1] !== undefined) packages.add(m[1])
  }
  return { code: run.code, packages }
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
