/**
 * How undici (and ws) connect to an upstream's origins: the connect timeout and, for
 * `https://`, the TLS files read from the config (src/config/upstreams.ts), and the pool of
 * keep-alive connections to one origin (an upstream's url, or one of its targets). Verification
 * is always on; `ca` replaces the system's CA certificates when `ca_file` is set. An
 * upstream without TLS settings gets the timeout alone.
 */
import type { ConnectionOptions } from 'node:tls'
import { Pool } from 'undici'
import type { UpstreamConfig } from '../../config/schema.js'
import type { UpstreamTls } from '../../config/upstreams.js'

export interface ConnectOptions extends ConnectionOptions {
  timeout: number
}

export function connectOptions (u: UpstreamConfig, tls: UpstreamTls): ConnectOptions {
  const options: ConnectOptions = { timeout: u.connect_timeout_ms }
  if (tls.ca !== undefined) options.ca = tls.ca
  if (tls.cert !== undefined) options.cert = tls.cert
  if (tls.key !== undefined) options.key = tls.key
  if (tls.servername !== undefined) options.servername = tls.servername
  if (Object.keys(options).length > 1) options.rejectUnauthorized = true
  return options
}

/** The keep-alive connections to one origin, each failure to connect reported. */
export function originPool (
  origin: string, u: UpstreamConfig, connect: ConnectOptions, connectFailed: (err: Error) => void
): Pool {
  const pool = new Pool(origin, { connections: u.connections, connect })
  pool.on('connectionError', (_origin, _targets, err) => { connectFailed(err) })
  return pool
}
