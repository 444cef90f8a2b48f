// CORS as the gateway applies it, driven through fastify's in-process injection (no
// socket): the compiled policy, the config checks, preflight answers and the headers
// every other response gets. The wiring into the gate is tested in test/integration/data-plane/cors.test.ts.
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { answerPreflight, compileCors, corsHeaders, isPreflight, type CorsPolicy } from '../../../src/data-plane/cors.js'
import { corsProblems } from '../../../src/config/cors.js'
import type { Config } from '../../../src/config/schema.js'
import { requestState, type RequestState } from '../../../src/http/request-state.js'

const APP = 'https://app.example.com'
type Cors = Config['cors']
const DEFAULTS: Cors = {
  allowed_origins: [],
  allowed_methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowed_headers: ['Authorization', 'Content-Type'],
  exposed_headers: ['X-Request-Id'],
  max_age_s: 600,
  allow_credentials: false
}
const cors = (over: Partial<Cors>): Cors => ({ ...DEFAULTS, ...over })

function policy (over: Partial<Cors>): CorsPolicy {
  const p = compileCors(cors(over))
  if (p === undefined) throw new Error('CORS off')
  return p
}

/** An app wired as the gateway wires CORS: preflights answered before anything else, headers on every response. */
async function app (p: CorsPolicy, upstreamVary?: string): Promise<FastifyInstance> {
  const a = Fastify()
  a.decorateRequest('kg', null as unknown as never)
  a.addHook('onRequest', async (request, reply) => {
    request.kg = requestState(request.url, '') satisfies RequestState
    if (isPreflight(request)) answerPreflight(p, request, reply)
  })
  a.addHook('onSend', corsHeaders(p))
  a.all('/*', async (_request, reply) => {
    if (upstreamVary !== undefined) reply.header('vary', upstreamVary)
    return { ok: true }
  })
  await a.ready()
  t.teardown(() => a.close())
  return a
}

const preflight = (origin: string, method = 'GET', headers?: string): Record<string, string> =>
  headers === undefined
    ? { origin, 'access-control-request-method': method }
    : { origin, 'access-control-request-method': method, 'access-control-request-headers': headers }

t.test('compileCors: off without origins; names normalised once', async (t) => {
  t.equal(compileCors(DEFAULTS), undefined, 'no origin listed: off')
  const p = policy({ allowed_origins: [APP], allowed_methods: ['get', 'Post'], allowed_headers: ['X-Trace', 'authorization'], exposed_headers: ['X-Request-Id', 'ETag'], max_age_s: 0 })
  t.same(p.origins, new Set([APP]))
  t.same(p.methods, new Set(['GET', 'POST']), 'methods upper-cased')
  t.same(p.headers, new Set(['x-trace', 'authorization']), 'headers lower-cased')
  t.equal(p.allowMethods, 'GET, POST')
  t.equal(p.allowHeaders, 'x-trace, authorization')
  t.equal(p.exposeHeaders, 'X-Request-Id, ETag')
  t.equal(p.maxAge, '0')
  t.equal(policy({ allowed_origins: [APP, '*'] }).origins, 'any', '`*` anywhere: any origin')
})

t.test('corsProblems: origins are scheme://host[:port]; credentials never with `*`', async (t) => {
  const rows: Array<[Partial<Cors>, RegExp[]]> = [
    [{ allowed_origins: [APP, 'http://localhost:3000', '*'] }, []],
    [{ allowed_origins: ['https://app.example.com/'] }, [/allowed_origins\[0\]/]],
    [{ allowed_origins: [APP, 'https://app.example.com/path'] }, [/allowed_origins\[1\]/]],
    [{ allowed_origins: ['app.example.com'] }, [/allowed_origins\[0\]/]],
    [{ allowed_origins: ['ftp://app.example.com'] }, [/allowed_origins\[0\]/]],
    [{ allowed_origins: ['https://APP.example.com'] }, [/allowed_origins\[0\]/]],
    [{ allowed_origins: ['https://app.example.com:443'] }, [/allowed_origins\[0\]/]],
    [{ allowed_origins: ['null'] }, [/allowed_origins\[0\]/]],
    [{ allowed_origins: ['*'], allow_credentials: true }, [/allow_credentials/]],
    [{ allowed_origins: [APP], allow_credentials: true }, []]
  ]
  for (const [over, expected] of rows) {
    const problems = corsProblems(cors(over))
    t.equal(problems.length, expected.length, JSON.stringify(over))
    expected.forEach((re, i) => t.match(problems[i], re))
  }
})

t.test('preflights: 204 with the allow headers, or 403 with none', async (t) => {
  const a = await app(policy({ allowed_origins: [APP], max_age_s: 120 }))
  const rows: Array<[string, Record<string, string>, number]> = [
    ['allowed origin, method and headers', preflight(APP, 'POST', 'Authorization, Content-Type'), 204],
    ['no headers asked', preflight(APP, 'DELETE'), 204],
    ['empty entries in the header list', preflight(APP, 'GET', 'authorization,, '), 204],
    ['another origin', preflight('https://evil.example'), 403],
    ['the allowed origin with another port', preflight('https://app.example.com:8443'), 403],
    ['the allowed origin over http', preflight('http://app.example.com'), 403],
    ['a method not allowed', preflight(APP, 'CONNECT'), 403],
    ['a method in another case', preflight(APP, 'get'), 403],
    ['a header not allowed', preflight(APP, 'GET', 'authorization, x-admin'), 403]
  ]
  for (const [what, headers, status] of rows) {
    const res = await a.inject({ method: 'OPTIONS', url: '/api/v1/users', headers })
    t.equal(res.statusCode, status, what)
    if (status === 204) {
      t.equal(res.headers['access-control-allow-origin'], APP, `${what}: the origin echoed`)
      t.equal(res.headers['access-control-allow-methods'], 'GET, HEAD, POST, PUT, PATCH, DELETE')
      t.equal(res.headers['access-control-allow-headers'], 'authorization, content-type')
      t.equal(res.headers['access-control-max-age'], '120')
      t.equal(res.headers['access-control-allow-credentials'], undefined)
      t.equal(res.headers.vary, 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
      t.equal(res.body, '')
    } else {
      t.same(Object.keys(res.headers).filter((h) => h.startsWith('access-control-')), [], `${what}: no CORS header`)
      t.match(res.json(), { error: { code: 'forbidden', status: 403 } })
    }
  }
  const notPreflight = await a.inject({ method: 'OPTIONS', url: '/x', headers: { origin: APP } })
  t.equal(notPreflight.statusCode, 200, 'OPTIONS without Access-Control-Request-Method is no preflight')
})

t.test('any origin: `*`, or the origin itself when credentials are allowed', async (t) => {
  const any = await app(policy({ allowed_origins: ['*'] }))
  const res = await any.inject({ method: 'OPTIONS', url: '/x', headers: preflight('https://whoever.example') })
  t.equal(res.headers['access-control-allow-origin'], '*')
  const simple = await any.inject({ method: 'GET', url: '/x', headers: { origin: 'https://whoever.example' } })
  t.equal(simple.headers['access-control-allow-origin'], '*')

  // (a compiled policy with both cannot come from a valid config; the answer is still never `*` with credentials)
  const creds = await app({ ...policy({ allowed_origins: ['*'] }), credentials: true })
  const c = await creds.inject({ method: 'GET', url: '/x', headers: { origin: 'https://whoever.example' } })
  t.equal(c.headers['access-control-allow-origin'], 'https://whoever.example')
  t.equal(c.headers['access-control-allow-credentials'], 'true')
})

t.test('other responses: the allow-origin and expose headers for an allowed origin; Vary: Origin always', async (t) => {
  const a = await app(policy({ allowed_origins: [APP], allow_credentials: true }))
  const rows: Array<[string, Record<string, string>, Record<string, string | undefined>]> = [
    ['allowed origin', { origin: APP }, { 'access-control-allow-origin': APP, 'access-control-expose-headers': 'X-Request-Id', 'access-control-allow-credentials': 'true', vary: 'Origin' }],
    ['another origin', { origin: 'https://evil.example' }, { 'access-control-allow-origin': undefined, 'access-control-expose-headers': undefined, 'access-control-allow-credentials': undefined, vary: 'Origin' }],
    ['no origin', {}, { 'access-control-allow-origin': undefined, vary: 'Origin' }]
  ]
  for (const [what, headers, expected] of rows) {
    const res = await a.inject({ method: 'GET', url: '/x', headers })
    for (const [name, value] of Object.entries(expected)) t.equal(res.headers[name], value, `${what}: ${name}`)
  }
  const preflightOk = await a.inject({ method: 'OPTIONS', url: '/x', headers: preflight(APP) })
  t.equal(preflightOk.headers['access-control-expose-headers'], undefined, "a preflight's answer is not given the response headers")
  t.equal(preflightOk.headers['access-control-allow-credentials'], 'true')

  const varyRows: Array<[string, string]> = [
    ['Accept-Encoding', 'Accept-Encoding, Origin'],
    ['accept-encoding, origin', 'accept-encoding, origin'],
    ['ORIGIN', 'ORIGIN'],
    ['X-Origin-Hint', 'X-Origin-Hint, Origin']
  ]
  for (const [upstream, expected] of varyRows) {
    const v = await app(policy({ allowed_origins: [APP] }), upstream)
    const res = await v.inject({ method: 'GET', url: '/x', headers: { origin: APP } })
    t.equal(res.headers.vary, expected, `Vary ${JSON.stringify(upstream)}`)
  }
})
