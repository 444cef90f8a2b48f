/**
 * Fuzzing the configuration loader (docs/security.md, "Fuzzing"): the shipped
 * config/keygate.yaml with one to four of its fields (or new ones) replaced by odd values
 * (wrong types, negative, huge and fractional numbers, empty and oversized strings, URLs
 * holding a password, prototype names), YAML that is no mapping or no YAML, aliases and
 * tags, and the environment overrides with odd values. For every one:
 *
 * - the loader returns a configuration or throws its ConfigError, never another error (the
 *   loader's 500: `keygate serve` and `config check` would print a stack instead of the
 *   fields);
 * - every problem it reports names a field (`<field>: ...`, `YAML: ...`, or the whole file);
 * - no secret is echoed: a password in a Redis URL (file or environment), the admin token,
 *   the OpenID client secret.
 * The loader writes nothing anywhere: its only output is the configuration or the error.
 */
import t from 'tap'
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import { parse, stringify } from 'yaml'
import { ConfigError, parseConfig } from '../../../src/config/load.js'
import { checkProperty, expect } from '../../helpers/fuzz.js'

const SECRET = 'Pw5ecretFuzz0123'
const SHIPPED = readFileSync(new URL('../../../config/keygate.yaml', import.meta.url), 'utf8')

/** every path to a field of the shipped file, containers included, plus a few it does not have */
function fieldPaths (value: unknown, at: string[] = []): string[][] {
  const out: string[][] = at.length === 0 ? [] : [at]
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...fieldPaths(v, [...at, k]))
  }
  return out
}
const SHIPPED_DOC = parse(SHIPPED) as Record<string, unknown>
const PATHS = [
  ...fieldPaths(SHIPPED_DOC),
  ['admin_token'], ['redis', 'password'], ['routes', '1'], ['rules', '5'], ['upstreams', 'other'], ['__proto__'],
  ['x-unknown']
]

const odd: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '', ' ', '0', '-1', 'true', 'null', '~', '*', '/', '//', '/api/v1', '/api/v1/:org/*', 'GET', 'get', 'core',
    'nowhere',
    'redis://127.0.0.1:6379', 'redis://:@h', 'redis+sentinel://h:26379/m', 'http://u:p@127.0.0.1:3000/path',
    'http://[::1', 'ftp://x', '0.0.0.0:99999', '127.0.0.1:-1', ':8080', '10.0.0.0/8', '::/0', '300.0.0.0/8', '1/0s',
    '5/1s', '90d', '-1d', '1e309', 'NaN', 'x'.repeat(10_000), 'a\u0000b', '\u202e', '{keygate}:', '{}', 'kg_',
    '__proto__'
  ),
  fc.constantFrom(0, -1, 1, 0.5, 65536, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 2 })
)

function withField (doc: Record<string, unknown>, path: string[], value: unknown): void {
  let holder: Record<string, unknown> = doc
  for (const step of path.slice(0, -1)) {
    const next = holder[step]
    if (next === null || typeof next !== 'object') holder[step] = {}
    holder = holder[step] as Record<string, unknown>
  }
  Object.defineProperty(holder, path[path.length - 1] as string, {
    value,
    enumerable: true,
    writable: true,
    configurable: true
  })
}

/** where a secret may be written (and must never be echoed from) */
const secretField = fc.tuple(
  fc.constantFrom<string[]>(['redis', 'url'], ['admin_token']),
  fc.constantFrom(`redis://:${SECRET}@127.0.0.1:6379`, `redis://user:${SECRET}@h/0`,
    `redis+sentinel://:${SECRET}@h:26379/m`,
    `redis+cluster://h:1?password=${SECRET}`, `redis://:${SECRET}@[::1`, SECRET)
)
const change = fc.oneof({ weight: 6, arbitrary: fc.tuple(fc.constantFrom(...PATHS), odd) }, {
  weight: 1,
  arbitrary: secretField
})

const mutated = fc.array(change, { minLength: 1, maxLength: 4 }).map((changes) => {
  const doc = structuredClone(SHIPPED_DOC)
  for (const [path, value] of changes) withField(doc, path, value)
  return stringify(doc)
})

const raw = fc.constantFrom(
  '', '---', '[]', '- a', '42', 'null', 'just text', ':', '{', 'a: [', '\t- x', 'redis: &a { url: *a }',
  'a: &x [*x]', 'a: !!binary aGVsbG8=', 'a: !!js/function "x"', 'listen: 1\nlisten: 2', '\u0000',
  `redis: { url: "redis://:${SECRET}@h:6379" }`, `admin_token: ${SECRET}`,
  'a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n' +
    'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]'
)

const envValue = fc.constantFrom('', 'x', '127.0.0.1:0', '::1:8080', 'redis+cluster://h:1', 'not a url', 'short', '0',
  '2')
const secretEnvValue = fc.constantFrom(`redis://:${SECRET}@127.0.0.1:1`, `redis://:${SECRET}@`,
  `redis+sentinel://:${SECRET}@h/`,
  SECRET, `${SECRET}!`, `${SECRET} x`, '')
const env = fc.tuple(
  fc.dictionary(fc.constantFrom('KEYGATE_LISTEN', 'KEYGATE_ADMIN_LISTEN', 'KEYGATE_AUTHZ_LISTEN',
    'KEYGATE_TRACING_SAMPLE_RATIO',
    'KEYGATE_TRACING_OTLP_ENDPOINT'), envValue, { maxKeys: 2 }),
  fc.dictionary(fc.constantFrom('KEYGATE_REDIS_URL', 'KEYGATE_ADMIN_TOKEN',
    'KEYGATE_OIDC_CLIENT_SECRET'), secretEnvValue, { maxKeys: 2 })
).map(([plain, secrets]) => ({ ...plain, ...secrets }))

/** a problem that names its field: `<field>: ...`, a YAML error, or the file as a whole */
// (a field's name is whatever the file wrote, an empty one or one with spaces included)
const NAMED = /^(YAML: |the file must hold a YAML mapping|\(top level\): |[A-Za-z_][^\n]*?: )/

t.test('the loader returns a configuration or its ConfigError, naming fields, echoing no secret', async (t) => {
  const arb = fc.tuple(fc.oneof({ weight: 8, arbitrary: mutated }, { weight: 1, arbitrary: raw }), env)
  await checkProperty(t, 'config loader', arb, 300, async ([text, environment]) => {
    const what = `${JSON.stringify(text.slice(0, 400))} with ${JSON.stringify(environment)}`
    let error: unknown
    try {
      parseConfig(text, environment, 'fuzz.yaml')
    } catch (err: unknown) {
      error = err
    }
    if (error === undefined) return
    expect(error instanceof ConfigError,
      `${what}: threw ${String(error)} ${(error as Error).stack?.split('\n').slice(0, 4).join(' | ') ?? ''}`)
    const problems = (error as ConfigError).problems
    expect(problems.length > 0, `${what}: a ConfigError without a problem`)
    for (const p of problems) {
      expect(NAMED.test(p),
      `${what}: a problem names no field: ${JSON.stringify(p.slice(0, 200))}`)
    }
    expect(!(error as Error).message.includes(SECRET),
      `${what}: a secret is echoed: ${(error as Error).message.slice(0, 600)}`)
  })
})
