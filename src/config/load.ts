/**
 * Loading the configuration: YAML file -> environment overrides -> defaults ->
 * schema validation -> cross-field checks (upstream references, rule patterns and
 * ambiguity, trusted proxies). Every problem is reported at once, each naming its field.
 */
import { readFileSync } from 'node:fs'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { parseDocument } from 'yaml'
import { KEY_FILE_ENV, KEY_FILE_FIELD, readAssertionKeys } from './assertion-key-files.js'
import { applyEnv, envProblems, hasValue, OIDC_SECRET_ENV } from './env.js'
import { addressProblem, trustedProxyProblem } from './addresses.js'
import { corsProblems } from './cors.js'
import { redisConfigProblems, urlHoldsSecret } from './redis-url.js'
import { selfServiceProblems, routeProblems } from './routes.js'
import { isUnderPrefix, ruleProblems } from './rule-patterns.js'
import { ConfigSchema, UpstreamSchema, type Config } from './schema.js'
import { ssoProblems } from './sso.js'
import { dedupe, isRecursive, literals } from './values.js'
import { readUpstreamTls, upstreamProblems } from './upstreams.js'

export const DEFAULT_CONFIG_FILE = 'config/keygate.yaml'

export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  constructor (readonly source: string, readonly problems: string[]) {
    super(`invalid configuration (${source}):\n` + problems.map((p) => `  - ${p}`).join('\n'))
  }
}

/** The file named by KEYGATE_CONFIG, else config/keygate.yaml. */
export function configFile (env: NodeJS.ProcessEnv = process.env): string {
  return env.KEYGATE_CONFIG ?? DEFAULT_CONFIG_FILE
}

export interface LoadOptions {
  /** serving needs at least one route; registry commands do not */
  forServing?: boolean
}

export function loadConfig (file: string = configFile(), env: NodeJS.ProcessEnv = process.env,
  opts: LoadOptions = {}): Config {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err: unknown) {
    const hint = file === DEFAULT_CONFIG_FILE && env.KEYGATE_CONFIG === undefined
      ? ` (the default, relative to ${process.cwd()}: name the file with KEYGATE_CONFIG or \`keygate serve --config\`)`
      : ''
    throw new ConfigError(file, [`cannot read the file: ${(err as Error).message}${hint}`])
  }
  return parseConfig(text, env, file, opts)
}

export function parseConfig (text: string, env: NodeJS.ProcessEnv = {}, source = 'config',
  opts: LoadOptions = {}): Config {
  const doc = parseDocument(text, { prettyErrors: true })
  if (doc.errors.length > 0) throw new ConfigError(source, doc.errors.map((e) => `YAML: ${e.message}`))
  const raw: unknown = toJS(doc, source) ?? {}
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(source, ['the file must hold a YAML mapping'])
  }
  if (isRecursive(raw)) {
    throw new ConfigError(source, ['YAML: an alias refers to a node that contains it (a recursive alias)'])
  }

  const problems = [...fileOnlyProblems(raw as Record<string, unknown>), ...envProblems(env)]
  const merged = applyEnv(structuredClone(raw) as Record<string, unknown>, env)
  const withDefaults = Value.Default(ConfigSchema, merged) as Record<string, unknown>
  // (TypeBox does not descend into Record values for defaults)
  const upstreams = withDefaults.upstreams
  if (typeof upstreams === 'object' && upstreams !== null) {
    for (const [name, u] of Object.entries(upstreams)) {
      (upstreams as Record<string, unknown>)[name] = Value.Default(UpstreamSchema, u)
    }
  }
  const schemaErrors = [...Value.Errors(ConfigSchema, withDefaults)]
  problems.push(...schemaErrors.map(describe))
  problems.push(...redisConfigProblems(withDefaults.redis))

  // The checks across fields run in the same pass, on the entries the schema accepted
  // (a rejected route or rule is left out, keeping the others' indexes), so that one
  // run lists every problem.
  const config = withoutRejected(withDefaults, schemaErrors) as Config
  const forServing = opts.forServing ?? true
  problems.push(...guarded(() => crossFieldProblems(config, forServing)))
  // the assertion's key files are read when serving (and by `config check`); registry commands never sign
  if (forServing) {
    problems.push(...guarded(() => readAssertionKeys(config.identity.assertion,
      hasValue(env[KEY_FILE_ENV]) ? KEY_FILE_ENV : KEY_FILE_FIELD).problems))
  }
  // so are the upstreams' TLS files
  if (forServing) {
    for (const [name, u] of Object.entries(config.upstreams ?? {})) {
      problems.push(...guarded(() => readUpstreamTls(name, u).problems))
    }
  }
  if (problems.length > 0) throw new ConfigError(source, dedupe(problems))
  return config
}

/** Array entries the schema rejected, removed (as holes, so the others keep their index). */
const ENTRY_LISTS = ['/routes/', '/rules/', '/trusted_proxies/', '/authz/trusted_peers/', '/cors/allowed_origins/']

function withoutRejected (config: Record<string, unknown>, errors: ValueError[]): Record<string, unknown> {
  if (errors.length === 0) return config
  const copy = structuredClone(config)
  for (const e of errors) {
    const list = ENTRY_LISTS.find((l) => e.path.startsWith(l))
    if (list === undefined) continue
    const index = Number(e.path.slice(list.length).split('/')[0])
    const names = list.split('/').filter((n) => n !== '')
    let holder: unknown = copy
    for (const n of names) holder = (holder as Record<string, unknown> | undefined)?.[n]
    if (Array.isArray(holder) && Number.isInteger(index)) Reflect.deleteProperty(holder, index)
  }
  return copy
}

/** A check that meets a field of the wrong shape (the schema has named it already) adds nothing. */
function guarded (check: () => string[]): string[] {
  try {
    return check()
  } catch (err: unknown) {
    if (err instanceof TypeError) return []
    throw err
  }
}

function fileOnlyProblems (raw: Record<string, unknown>): string[] {
  const problems: string[] = []
  const redis = raw.redis as { url?: unknown } | undefined
  if (typeof redis?.url === 'string' && urlHoldsSecret(redis.url)) {
    problems.push('redis.url: must not hold a password; put the whole URL in KEYGATE_REDIS_URL instead')
  }
  if (Object.hasOwn(raw, 'admin_token')) {
    problems.push('admin_token: secrets never come from the file; set KEYGATE_ADMIN_TOKEN instead')
  }
  const oidc = (raw.sso as { oidc?: unknown } | undefined)?.oidc
  if (typeof oidc === 'object' && oidc !== null && Object.hasOwn(oidc, 'client_secret')) {
    problems.push(`sso.oidc.client_secret: secrets never come from the file; set ${OIDC_SECRET_ENV} instead`)
  }
  return problems
}

function crossFieldProblems (c: Config, forServing: boolean): string[] {
  const problems: string[] = []
  const check = (fn: () => void): void => { problems.push(...guarded(() => { fn(); return [] })) }
  check(() => { problems.push(...routeProblems(c.routes, c.upstreams, c.identity.header_prefix)) })
  check(() => { problems.push(...selfServiceProblems(c.routes, c.self_service)) })
  check(() => {
    for (const [name, u] of Object.entries(c.upstreams)) problems.push(...guarded(() => upstreamProblems(name, u)))
  })
  check(() => {
    c.rules.forEach((rule, i) => {
      const under = c.routes.some((r) => isUnderPrefix(r.prefix, rule.path))
      if (!under) problems.push(`rules[${i}].path: ${rule.path} is under no route prefix, so it can never match`)
    })
  })
  check(() => { problems.push(...ruleProblems(c.rules)) })
  check(() => {
    problems.push(...ruleProblems(c.shadow_rules).map((p) => `shadow_${p}`))
    c.shadow_rules.forEach((rule, i) => {
      if (!c.routes.some((r) => isUnderPrefix(r.prefix, rule.path))) {
        problems.push(`shadow_rules[${i}].path: ${rule.path} is under no route prefix, so it can never match`)
      }
    })
  })
  check(() => {
    c.trusted_proxies.forEach((entry, i) => {
      const p = trustedProxyProblem(entry)
      if (p !== undefined) problems.push(`trusted_proxies[${i}]: ${p}`)
    })
  })
  check(() => {
    c.authz.trusted_peers.forEach((entry, i) => {
      const p = trustedProxyProblem(entry)
      if (p !== undefined) problems.push(`authz.trusted_peers[${i}]: ${p}`)
    })
  })
  const listeners = [
    ['listen', c.listen],
    ['admin_listen', c.admin_listen],
    ['authz_listen', c.authz_listen],
    ['authz_grpc_listen', c.authz_grpc_listen],
    ['ops_listen', c.ops_listen]
  ] as const
  check(() => {
    for (const [name, hostPort] of listeners) {
      if (typeof hostPort !== 'string') continue
      const p = addressProblem(hostPort)
      if (p !== undefined) problems.push(`${name}: ${p}`)
      const other = listeners.find(([n, hp]) => n !== name && hp === hostPort && !hostPort.endsWith(':0'))
      if (other !== undefined && name < other[0]) {
        problems.push(`${name}: ${hostPort} is also ${other[0]}; each listener needs its own address`)
      }
    }
  })
  check(() => {
    if (c.keys.test_prefix === c.keys.prefix) {
      problems.push(`keys.test_prefix: ${c.keys.test_prefix} is keys.prefix too; a test key needs a prefix of its own`)
    }
  })
  check(() => { problems.push(...corsProblems(c.cors)) })
  check(() => { problems.push(...ssoProblems(c.sso)) })
  if (forServing && Array.isArray(c.routes) && c.routes.length === 0) {
    problems.push('routes: at least one route prefix is needed, or nothing is served')
  }
  return problems
}

/** `/upstreams/core/url` -> `upstreams.core.url`, `/rules/2/method` -> `rules[2].method` */
function describe (e: ValueError): string {
  const field = e.path.split('/').slice(1).map((p, i) => /^[0-9]+$/.test(p) ? `[${p}]` : (i === 0 ? p : '.' + p))
    .join('') || '(top level)'
  let message = e.message
  if (e.schema.description !== undefined) {
    message = `must be ${String(e.schema.description)}, got ${JSON.stringify(e.value)}`
  }
  if (e.type === ValueErrorType.ObjectAdditionalProperties) message = 'unknown field'
  const allowed = literals(e.schema)
  if (allowed !== undefined) {
    message = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(e.value)}`
  }
  return `${field}: ${message}`
}

/** The document as plain values; aliases that expand past the YAML library's bound are the file's problem. */
function toJS (doc: ReturnType<typeof parseDocument>, source: string): unknown {
  try {
    return doc.toJS()
  } catch (err: unknown) {
    throw new ConfigError(source, [`YAML: ${err instanceof Error ? err.message : String(err)}`])
  }
}
