/**
 * `redis.url`: which Redis topology holds the registry, in one string.
 *
 *   redis://[user:pass@]host[:port][/db]                        standalone (rediss:// for TLS)
 *   redis+sentinel://[user:pass@]host[:port][,host[:port]...]/<master-name>[?db=N]
 *                                                                Sentinel: the sentinels and the
 *                                                                name of the master they watch
 *   redis+cluster://[user:pass@]host[:port][,host[:port]...]    Cluster: any of its nodes (seeds)
 *
 * `rediss+sentinel://` and `rediss+cluster://` use TLS for every connection (for
 * Sentinel: to the sentinels and to the master). Credentials are the data nodes'; a
 * Sentinel's own, if it has any, go in `?sentinel_username=&sentinel_password=`.
 * Whatever holds a password comes from the environment, never the file (load.ts).
 *
 * Parsing never echoes the URL in a message: it may hold a password.
 * Reference: docs/topologies.md.
 */

export interface HostPort {
  host: string
  port: number
}

interface Credentials {
  username?: string
  password?: string
}

export interface StandaloneTarget extends Credentials {
  topology: 'standalone'
  tls: boolean
  host: string
  port: number
  db: number
}

export interface SentinelTarget extends Credentials {
  topology: 'sentinel'
  tls: boolean
  sentinels: HostPort[]
  /** the master's name, as in `sentinel monitor <name> ...` */
  name: string
  db: number
  sentinelUsername?: string
  sentinelPassword?: string
}

export interface ClusterTarget extends Credentials {
  topology: 'cluster'
  tls: boolean
  /** seed nodes: the rest of the cluster is discovered from them */
  nodes: HostPort[]
}

export type RedisTarget = StandaloneTarget | SentinelTarget | ClusterTarget
export type Topology = RedisTarget['topology']

/** An unusable `redis.url`; the message never holds the URL (it may hold a password). */
export class RedisUrlError extends Error {
  override readonly name = 'RedisUrlError'
}

const SCHEMES: Record<string, { topology: Topology, tls: boolean }> = {
  redis: { topology: 'standalone', tls: false },
  rediss: { topology: 'standalone', tls: true },
  'redis+sentinel': { topology: 'sentinel', tls: false },
  'rediss+sentinel': { topology: 'sentinel', tls: true },
  'redis+cluster': { topology: 'cluster', tls: false },
  'rediss+cluster': { topology: 'cluster', tls: true }
}
const SCHEME_LIST = 'redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://'
const DEFAULT_PORT: Record<Topology, number> = { standalone: 6379, sentinel: 26379, cluster: 6379 }
const SENTINEL_PARAMS = ['db', 'sentinel_username', 'sentinel_password']
const HOST = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+))(?::([0-9]{1,5}))?$/
const DB = /^(0|[1-9][0-9]{0,4})$/
const MASTER_NAME = /^[A-Za-z0-9._-]{1,128}$/

export function parseRedisUrl (url: string): RedisTarget {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/s.exec(url)
  const scheme = SCHEMES[m?.[1]?.toLowerCase() ?? '']
  if (m === null || scheme === undefined) throw new RedisUrlError(`must start with ${SCHEME_LIST}`)
  const { topology, tls } = scheme
  const rest = m[2] as string
  if (rest.includes('#')) throw new RedisUrlError('must not have a #fragment')

  const authorityEnd = rest.search(/[/?]/)
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)
  const afterAuthority = authorityEnd === -1 ? '' : rest.slice(authorityEnd)
  const q = afterAuthority.indexOf('?')
  const path = q === -1 ? afterAuthority : afterAuthority.slice(0, q)
  const params = new URLSearchParams(q === -1 ? '' : afterAuthority.slice(q + 1))

  const at = authority.lastIndexOf('@')
  const credentials = at === -1 ? {} : parseCredentials(authority.slice(0, at))
  // (a host is echoed in a message only when the URL has no credentials that could be mistaken for one)
  const hosts = parseHosts(authority.slice(at + 1), DEFAULT_PORT[topology], !url.includes('@'))

  if (topology === 'standalone') {
    if (hosts.length > 1) {
      throw new RedisUrlError(
        'a redis:// URL names one server; for several, use redis+sentinel:// (the sentinels) ' +
        'or redis+cluster:// (cluster nodes)'
      )
    }
    noParams(params, 'a redis:// URL takes no ?parameters (the database is its path: redis://host:6379/2)')
    const db = path === '' || path === '/' ? '0' : path.slice(1)
    if (!DB.test(db)) throw new RedisUrlError('the path of a redis:// URL is the database number (redis://host:6379/2)')
    const { host, port } = hosts[0] as HostPort
    return { topology, tls, host, port, db: Number(db), ...credentials }
  }

  if (topology === 'sentinel') {
    const name = path.slice(1)
    if (!path.startsWith('/') || !MASTER_NAME.test(name)) {
      throw new RedisUrlError(
        'a redis+sentinel:// URL names the master after the sentinels: ' +
        'redis+sentinel://host:26379[,host:port...]/<master-name> (letters, digits, . _ -)'
      )
    }
    for (const key of params.keys()) {
      if (!SENTINEL_PARAMS.includes(key)) {
        throw new RedisUrlError(
          `unknown parameter "${key}" (a redis+sentinel:// URL takes ${SENTINEL_PARAMS.join(', ')})`
        )
      }
    }
    const db = params.get('db') ?? '0'
    if (!DB.test(db)) throw new RedisUrlError('?db= must be a database number')
    const target: SentinelTarget = { topology, tls, sentinels: hosts, name, db: Number(db), ...credentials }
    const sentinelUsername = params.get('sentinel_username')
    const sentinelPassword = params.get('sentinel_password')
    if (sentinelUsername !== null && sentinelUsername !== '') target.sentinelUsername = sentinelUsername
    if (sentinelPassword !== null && sentinelPassword !== '') target.sentinelPassword = sentinelPassword
    if (target.sentinelUsername !== undefined && target.sentinelPassword === undefined) {
      throw new RedisUrlError('sentinel_username needs sentinel_password')
    }
    return target
  }

  if (path !== '' && path !== '/') {
    throw new RedisUrlError('a redis+cluster:// URL takes no path (a Redis Cluster has only database 0)')
  }
  noParams(params, 'a redis+cluster:// URL takes no ?parameters')
  return { topology, tls, nodes: hosts, ...credentials }
}

/** True when the URL carries a secret (a password, or a sentinel password): such a URL belongs in the environment. */
export function urlHoldsSecret (url: string): boolean {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)([^#]*)/s.exec(url)
  if (m === null) return false
  const authority = m[1] as string
  const at = authority.lastIndexOf('@')
  if (at !== -1 && authority.slice(0, at).includes(':') && !authority.slice(0, at).endsWith(':')) return true
  const q = (m[2] as string).indexOf('?')
  return q !== -1 && (new URLSearchParams((m[2] as string).slice(q + 1)).get('sentinel_password') ?? '') !== ''
}

/**
 * The hash tag of a key prefix, exactly as Redis Cluster reads it: the text between
 * the first `{` and the first `}` after it, when that text is not empty. Every key
 * that starts with such a prefix hashes to the slot of the tag.
 */
export function hashTag (prefix: string): string | undefined {
  const open = prefix.indexOf('{')
  if (open === -1) return undefined
  const close = prefix.indexOf('}', open + 1)
  if (close === -1 || close === open + 1) return undefined
  return prefix.slice(open + 1, close)
}

/**
 * The `redis` section's problems, each naming its field: an unusable URL, and a Cluster
 * URL with a prefix that does not pin every registry key to one slot. Takes the
 * section before validation (so every problem of a file is reported at once).
 */
export function redisConfigProblems (section: unknown): string[] {
  if (typeof section !== 'object' || section === null) return []
  const { url, prefix } = section as { url?: unknown, prefix?: unknown }
  if (typeof url !== 'string') return []
  let target: RedisTarget
  try {
    target = parseRedisUrl(url)
  } catch (err: unknown) {
    if (err instanceof RedisUrlError) return [`redis.url: ${err.message}`]
    throw err
  }
  if (target.topology === 'cluster' && typeof prefix === 'string' && hashTag(prefix) === undefined) {
    return [
      'redis.prefix: a Redis Cluster registry needs a hash tag in the prefix, ' +
      `such as "{${prefix.replace(/[{}:]+$/, '') || 'keygate'}}:", ` +
      'so that every registry key hashes to one slot ' +
      '(the gateway\'s Lua read and the CLI\'s MULTI/EXEC each touch several keys at once; ' +
      `see docs/topologies.md); got ${JSON.stringify(prefix)}`
    ]
  }
  return []
}

/**
 * The URL as it was written, its passwords (the userinfo's, `sentinel_password`) as `***`:
 * what may appear in a log line. (Textual, so that it works on a URL that does not parse.)
 */
export function redactedUrl (url: string): string {
  return url
    .replace(/^([^:/?#]+:\/\/)([^/?#]*)@/, (_all, scheme: string, userinfo: string) => {
      const colon = userinfo.indexOf(':')
      return scheme + (colon === -1 ? '***' : userinfo.slice(0, colon) + ':***') + '@'
    })
    .replace(/([?&]sentinel_password=)[^&#]*/gi, '$1***')
}

/** host:port list, without credentials: what may appear in a log line or an error. */
export function describeTarget (t: RedisTarget): string {
  const list = (hs: HostPort[]): string =>
    hs.map((h) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`).join(',')
  const tls = t.tls ? ' (TLS)' : ''
  if (t.topology === 'standalone') return `standalone ${list([t])} db ${t.db}${tls}`
  if (t.topology === 'sentinel') return `sentinel master "${t.name}" via ${list(t.sentinels)} db ${t.db}${tls}`
  return `cluster seeds ${list(t.nodes)}${tls}`
}

function parseCredentials (userinfo: string): Credentials {
  const colon = userinfo.indexOf(':')
  const username = decode(colon === -1 ? userinfo : userinfo.slice(0, colon))
  const password = colon === -1 ? '' : decode(userinfo.slice(colon + 1))
  if (password === '') {
    if (username === '') return {}
    throw new RedisUrlError(
      'a username needs a password (redis://user:password@host); the password-only form is redis://:password@host'
    )
  }
  return username === '' ? { password } : { username, password }
}

function decode (s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    throw new RedisUrlError('the credentials hold invalid percent-encoding')
  }
}

function parseHosts (list: string, defaultPort: number, echo: boolean): HostPort[] {
  if (list === '') throw new RedisUrlError('names no host')
  return list.split(',').map((item) => {
    const m = HOST.exec(item)
    const port = m?.[3] === undefined ? defaultPort : Number(m[3])
    if (m === null || port < 1 || port > 65535) {
      throw new RedisUrlError(
        `${echo ? `"${item.slice(0, 100)}"` : 'an entry of the host list'} ` +
        'is not host[:port] (IPv6 in brackets: [::1]:6379)'
      )
    }
    return { host: (m[1] ?? m[2]) as string, port }
  })
}

function noParams (params: URLSearchParams, message: string): void {
  if ([...params.keys()].length > 0) throw new RedisUrlError(message)
}
