// The request log (docs/operating.md) and its reasons (docs/errors.md): one JSON line per
// request with the request id (the response's X-Request-Id), method, path without
// the query string, status, key id, the precise reason and a numeric latency.
// The caller's org, user and role ride on the line, and `upstream_status` says what the upstream
// answered apart from keygate's own `status`.
// Never the key, the Authorization header or a query string.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { startGateway, type LogLine } from '../../helpers/gateway.js'
import { generateKey } from '../../../src/registry/key-format.js'

const gw = await startGateway(t)
const f = gw.fixtures
const K = f.keys
const prefix = gw.config.keys.prefix

/** Every credential sent during this file, to search the logs for afterwards. */
const secrets: string[] = []
const QUERY_MARK = 'SECRETQUERY'

interface Scenario {
  method?: string
  target: string
  /** the Authorization header value, if any */
  authorization?: string
  body?: string
  /** the key id the line must carry; null: the line carries none */
  keyId?: string | null
}

interface Row {
  reason: string
  status: number
  /** the path the line must carry */
  path: string
  setup: () => Promise<Scenario>
}

async function personal (user = 'alice'): Promise<{ id: string, key: string }> {
  const k = await f.personalKey(user)
  secrets.push(k.key)
  return k
}

async function freshUser (org = 'acme', role = 'reader'): Promise<string> {
  const id = `u-${randomBytes(4).toString('hex')}`
  await f.user(id, org, role)
  return id
}

const q = (n: string): string => `?token=${QUERY_MARK}${n}&x=1`

const matrix: Row[] = [
  {
    reason: 'allowed',
    status: 200,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal()
      return { target: '/api/v1/users' + q('a'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'allowed',
    status: 200,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal('bob')
      return { method: 'POST', target: '/api/v1/users' + q('b'), authorization: `Bearer ${k.key}`, body: '{"name":"x"}', keyId: k.id }
    }
  },
  {
    reason: 'missing_credential',
    status: 401,
    path: '/api/v1/users',
    setup: async () => ({ target: '/api/v1/users' + q('c'), keyId: null })
  },
  {
    reason: 'missing_credential',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const basic = Buffer.from(`alice:${QUERY_MARK}pw`).toString('base64')
      secrets.push(basic)
      return { target: '/api/v1/users' + q('d'), authorization: `Basic ${basic}`, keyId: null }
    }
  },
  {
    reason: 'malformed_credential',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      secrets.push('notakey123')
      return { target: '/api/v1/users' + q('e'), authorization: 'Bearer notakey123', keyId: null }
    }
  },
  {
    reason: 'malformed_credential',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal()
      return { target: '/api/v1/users' + q('f'), authorization: `Bearer ${k.key} ${k.key}`, keyId: null }
    }
  },
  {
    reason: 'bad_checksum',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal()
      const typo = k.key.slice(0, -1) + (k.key.endsWith('a') ? 'b' : 'a')
      secrets.push(typo)
      return { target: '/api/v1/users' + q('g'), authorization: `Bearer ${typo}` } // key id: either way
    }
  },
  {
    reason: 'unknown_key',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const g = generateKey(prefix)
      secrets.push(g.key)
      return { target: '/api/v1/users' + q('h'), authorization: `Bearer ${g.key}`, keyId: g.id }
    }
  },
  {
    reason: 'secret_mismatch',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const g = generateKey(prefix)
      secrets.push(g.key)
      await gw.client.hset(K.key(g.id), {
        type: 'bot',
        hash: generateKey(prefix).hash,
        org: 'acme',
        role: 'admin',
        name: 'm',
        status: 'active',
        created_at: '2025-01-01T00:00:00Z',
        created_by: 'cli:test'
      })
      return { target: '/api/v1/users' + q('i'), authorization: `Bearer ${g.key}`, keyId: g.id }
    }
  },
  {
    reason: 'key_revoked',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal()
      await f.hset(K.key(k.id), 'status', 'revoked')
      return { target: '/api/v1/users' + q('j'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'key_expired',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal()
      await f.hset(K.key(k.id), 'expires_at', '2020-01-01T00:00:00Z')
      return { target: '/api/v1/users' + q('k'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'user_missing',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const user = await freshUser()
      const k = await personal(user)
      await gw.client.del(K.user(user))
      return { target: '/api/v1/users' + q('l'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'user_deactivated',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const user = await freshUser()
      const k = await personal(user)
      await f.hset(K.user(user), 'status', 'deactivated')
      return { target: '/api/v1/users' + q('m'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    // step 5: the user's org differs from the key's
    reason: 'org_mismatch',
    status: 401,
    path: '/api/v1/users',
    setup: async () => {
      const user = await freshUser()
      const k = await personal(user)
      await f.hset(K.user(user), 'org', 'globex')
      return { target: '/api/v1/users' + q('n'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    // step 7: the path's org parameter is not the caller's org
    reason: 'org_mismatch',
    status: 403,
    path: '/api/v1/orgs/acme/projects',
    setup: async () => {
      const k = await personal('carol')
      return { target: '/api/v1/orgs/acme/projects' + q('o'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'no_rule',
    status: 403,
    path: '/api/v1/no/rule',
    setup: async () => {
      const k = await personal()
      return { target: '/api/v1/no/rule' + q('p'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'missing_permission',
    status: 403,
    path: '/api/v1/users',
    setup: async () => {
      const k = await personal('carol')
      return { target: '/api/v1/users' + q('q'), authorization: `Bearer ${k.key}`, keyId: k.id }
    }
  },
  {
    reason: 'bad_path',
    status: 400,
    path: '/api/v1/a;b',
    setup: async () => {
      const k = await personal()
      return { target: '/api/v1/a;b' + q('r'), authorization: `Bearer ${k.key}`, keyId: null }
    }
  },
  {
    reason: 'no_route',
    status: 404,
    path: '/elsewhere',
    setup: async () => {
      const k = await personal()
      return { target: '/elsewhere' + q('s'), authorization: `Bearer ${k.key}`, keyId: null }
    }
  },
  {
    reason: 'no_route',
    status: 404,
    path: '/elsewhere',
    setup: async () => ({ method: 'DELETE', target: '/elsewhere' + q('t'), keyId: null })
  }
]

function latencyOf (line: LogLine | undefined): unknown {
  if (line === undefined) return undefined
  const name = Object.keys(line).find((n) => /^latency/.test(n))
  return name === undefined ? undefined : line[name]
}

const seenIds: string[] = []

for (const row of matrix) {
  t.test(`${row.reason} (${row.status})`, async (t) => {
    const s = await row.setup()
    const method = s.method ?? 'GET'
    const headers: Record<string, string> = s.authorization === undefined ? {} : { Authorization: s.authorization }
    if (s.authorization !== undefined) secrets.push(s.authorization)
    const res = await gw.send(method, s.target, headers, s.body)
    t.equal(res.status, row.status, 'response status')
    const id = res.headers['x-request-id']
    t.match(id, /\S/, 'X-Request-Id')
    if (id === undefined) return
    seenIds.push(id)

    const line = await gw.logOf(res)
    t.ok(line !== undefined, 'a log line with req_id = X-Request-Id')
    await new Promise((resolve) => setTimeout(resolve, 50))
    t.equal(gw.logs.filter((l) => l.req_id === id).length, 1, 'exactly one line for the request')
    t.equal(line?.method, method, 'method')
    t.equal(line?.path, row.path, 'path without the query string')
    t.equal(line?.status, row.status, 'status')
    t.equal(line?.reason, row.reason, 'reason')
    if (s.keyId === null) t.equal(line?.key_id, undefined, 'no key id')
    else if (s.keyId !== undefined) t.equal(line?.key_id, s.keyId, 'key id')
    const latency = latencyOf(line)
    t.ok(typeof latency === 'number' && Number.isFinite(latency) && latency >= 0, `numeric latency (${String(latency)})`)
  })
}

t.test('org, user and role on the line; upstream_status only when the upstream answered', async (t) => {
  const alice = await personal('alice')
  const allowed = await gw.send('GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  t.equal(allowed.status, 200)
  const a = await gw.logOf(allowed)
  t.match(a, { org: 'acme', user: 'alice', role: 'reader', status: 200, upstream_status: 200 }, 'a personal key')

  const bot = await f.botKey('writer', 'globex')
  secrets.push(bot.key)
  gw.upstream.setMode({ kind: 'status', status: 503, body: 'down' })
  try {
    const res = await gw.send('GET', '/api/v1/users', { Authorization: `Bearer ${bot.key}` })
    t.equal(res.status, 503, 'the upstream\'s 503 reaches the client')
    const b = await gw.logOf(res)
    t.match(b, { org: 'globex', role: 'writer', status: 503, upstream_status: 503, reason: 'allowed' },
      'a BOT key, and a 503 the upstream gave')
    t.equal(b?.user, undefined, 'a BOT key has no user')
  } finally {
    gw.upstream.setMode('echo')
  }

  const refused = await gw.send('GET', '/api/v1/no/rule', { Authorization: `Bearer ${alice.key}` })
  t.equal(refused.status, 403)
  const r = await gw.logOf(refused)
  t.equal(r?.upstream_status, undefined, 'keygate answered alone: no upstream_status')
  t.equal(r?.reason, 'no_rule')

  const anonymous = await gw.send('GET', '/api/v1/users')
  const n = await gw.logOf(anonymous)
  t.equal(n?.status, 401)
  t.same([n?.org, n?.user, n?.role, n?.upstream_status], [undefined, undefined, undefined, undefined],
    'no identity, no upstream')
})

t.test('every log line is ASCII (the process sink copies request lines byte for byte)', async (t) => {
  t.ok(gw.rawLogs.length >= matrix.length, 'lines were logged')
  const offending = gw.rawLogs.filter((line) => !/^[\x20-\x7E]*$/.test(line))
  t.same(offending, [], 'no line holds a character outside printable ASCII')
})

t.test('no key, Authorization value or query string in any log line', async (t) => {
  t.ok(seenIds.length >= matrix.length, 'the requests above were made')
  t.ok(gw.rawLogs.length >= seenIds.length, 'and logged')
  const all = gw.rawLogs.join('\n')
  t.notOk(all.includes(QUERY_MARK), 'no query string')
  t.notOk(all.includes('token='), 'no query parameter')
  for (const secret of secrets) {
    t.notOk(all.includes(secret), `never logged: ${secret.slice(0, 6)}...`)
  }
  // nor any long fragment of a key's secret part
  for (const secret of secrets.filter((s) => s.startsWith(prefix))) {
    const secretPart = secret.slice(prefix.length + 17, prefix.length + 17 + 32)
    t.notOk(all.includes(secretPart), `no secret part: ${secret.slice(0, 6)}...`)
  }
  t.notOk(/bearer/i.test(all), 'no Bearer credential')
})
