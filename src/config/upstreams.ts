/**
 * Upstreams across their fields: one `url` or a list of `targets`, the options that
 * only targets have, the health check's timings, and the TLS files, read synchronously
 * so that the loader (and `keygate config check`) reports a missing, unreadable or
 * unfit file with the other problems, each naming its setting. Messages name the file
 * and the problem, never its content.
 */
import { readFileSync } from 'node:fs'
import { createSecureContext } from 'node:tls'
import type { UpstreamConfig } from './schema.js'

const CHECK_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000 }

/** A health check's duration (`500ms`, `5s`, `1m`) in milliseconds, or undefined when it is not one. */
export function parseCheckDuration (text: string): number | undefined {
  const m = /^([0-9]{1,9})(ms|s|m)$/.exec(text)
  if (m === null) return undefined
  return Number(m[1]) * (CHECK_UNITS[m[2] as string] as number)
}

/** The origins an upstream forwards to: its `url`, or its `targets`, without a trailing slash. */
export function upstreamOrigins (u: UpstreamConfig): string[] {
  const listed = u.targets ?? (u.url === undefined ? [] : [u.url])
  return listed.map((o) => new URL(o).origin)
}

/** The TLS settings of an upstream's `https://` origins, read from their files. */
export interface UpstreamTls {
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
  servername?: string
}

const TARGET_ONLY = ['balancing', 'health_check', 'passive'] as const
const TLS_FIELDS = ['ca_file', 'servername', 'client_cert_file', 'client_key_file'] as const

/** Problems across an upstream's fields (the schema checked each field alone). */
export function upstreamProblems (name: string, u: UpstreamConfig): string[] {
  const at = `upstreams.${name}`
  const problems: string[] = []
  if (u.url === undefined && u.targets === undefined) problems.push(`${at}: needs a url or a list of targets`)
  if (u.url !== undefined && u.targets !== undefined) problems.push(`${at}: has both url and targets; keep one`)
  if (u.targets === undefined) {
    for (const field of TARGET_ONLY) {
      if (u[field] !== undefined) problems.push(`${at}.${field}: only an upstream with targets has it`)
    }
  } else {
    const seen = new Set<string>()
    u.targets.forEach((t, i) => {
      const origin = new URL(t).origin
      if (seen.has(origin)) problems.push(`${at}.targets[${i}]: ${origin} is listed twice`)
      seen.add(origin)
    })
  }
  const check = u.health_check
  if (check !== undefined) {
    const interval = parseCheckDuration(check.interval)
    const timeout = parseCheckDuration(check.timeout)
    if (interval !== undefined && timeout !== undefined && timeout >= interval) {
      problems.push(`${at}.health_check.timeout: must be shorter than the interval (${check.interval}), ` +
        `got ${check.timeout}`)
    }
  }
  const secure = upstreamOrigins(u).some((o) => o.startsWith('https:'))
  if (!secure) {
    for (const field of TLS_FIELDS) {
      if (u[field] !== undefined) problems.push(`${at}.${field}: only an https:// upstream uses it`)
    }
  }
  if ((u.client_cert_file === undefined) !== (u.client_key_file === undefined)) {
    const missing = u.client_cert_file === undefined ? 'client_cert_file' : 'client_key_file'
    problems.push(`${at}.${missing}: mTLS needs both client_cert_file and client_key_file`)
  }
  return problems
}

/**
 * The TLS files of an upstream, read now (at start, at `config check`, and on SIGHUP),
 * or the problems, each naming its setting. Verification is never turned off: without
 * `ca_file` the system's CA certificates verify the upstream.
 */
export function readUpstreamTls (name: string, u: UpstreamConfig): { tls: UpstreamTls, problems: string[] } {
  const at = `upstreams.${name}`
  const problems: string[] = []
  const tls: UpstreamTls = {}
  const read = (field: 'ca_file' | 'client_cert_file' | 'client_key_file'): Buffer | undefined => {
    const file = u[field]
    if (file === undefined) return undefined
    try {
      const pem = readFileSync(file)
      if (!pem.includes('-----BEGIN ')) {
        problems.push(`${at}.${field}: ${file} holds no PEM block`)
        return undefined
      }
      return pem
    } catch (err: unknown) {
      problems.push(`${at}.${field}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
      return undefined
    }
  }
  const ca = read('ca_file')
  const cert = read('client_cert_file')
  const key = read('client_key_file')
  if (ca !== undefined) tls.ca = ca
  if (cert !== undefined) tls.cert = cert
  if (key !== undefined) tls.key = key
  if (u.servername !== undefined) tls.servername = u.servername
  if (problems.length === 0 && (ca !== undefined || cert !== undefined || key !== undefined)) {
    // the files as TLS reads them: certificates that parse, a key that matches its certificate
    try {
      createSecureContext({ ca, cert, key })
    } catch (err: unknown) {
      const field = ca !== undefined && cert === undefined ? 'ca_file' : 'client_cert_file'
      problems.push(`${at}.${field}: TLS cannot use the files: ${tlsProblem(err)}`)
    }
  }
  return { tls, problems }
}

/** A TLS library error as a short phrase (its code, or the first line of its message; never file content). */
function tlsProblem (err: unknown): string {
  const e = err as { code?: unknown, message?: unknown }
  if (typeof e.code === 'string' && e.code !== '') return e.code
  return typeof e.message === 'string' ? (e.message.split('\n')[0] ?? 'unusable') : 'unusable'
}
