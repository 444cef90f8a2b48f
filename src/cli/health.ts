/**
 * `keygate health`: asks the gateway's /healthz (or /readyz with --ready), at the
 * address the gateway itself serves them on (ops_listen, KEYGATE_OPS_LISTEN when set;
 * else admin_listen, KEYGATE_ADMIN_LISTEN), so a container's HEALTHCHECK follows the
 * configuration. Exit 0 when it answers 200, 1
 * otherwise. A wildcard listen address is asked on loopback.
 */
import type { Command } from 'commander'
import { request } from 'node:http'
import { cliConfig, duration } from './context.js'

export function healthCommand (program: Command): void {
  program.command('health')
    .description(
      'exit 0 (and say so) when the running gateway answers /healthz (or /readyz) with 200 on its ops_listen, ' +
        'else its admin_listen; else 1'
    )
    .option('--ready', 'ask /readyz (Redis reachable) instead of /healthz (process alive)')
    .option('--timeout <duration>', 'give up after this long, e.g. 2s', duration, 2000)
    .action(async (opts: { ready?: boolean, timeout: number }) => {
      const config = cliConfig()
      const { host, port } = probeAddress(config.ops_listen ?? config.admin_listen)
      const path = opts.ready === true ? '/readyz' : '/healthz'
      const status = await get(host, port, path, opts.timeout)
      if (status === 200) {
        process.stdout.write(`ok: ${path} at ${host}:${port} answered 200\n`)
        return
      }
      process.stderr.write(
        `error: ${path} at ${host}:${port} ${status === undefined ? 'did not answer' : `answered ${status}`}\n`
      )
      process.exitCode = 1
    })
}

/** `host:port` of a listen address, a wildcard host replaced by loopback. */
export function probeAddress (listen: string): { host: string, port: number } {
  const i = listen.lastIndexOf(':')
  let host = listen.slice(0, i)
  if (host.startsWith('[')) host = host.slice(1, -1)
  if (host === '0.0.0.0') host = '127.0.0.1'
  if (host === '::') host = '::1'
  return { host, port: Number(listen.slice(i + 1)) }
}

async function get (host: string, port: number, path: string, timeoutMs: number): Promise<number | undefined> {
  return await new Promise((resolve) => {
    const req = request({ host, port, path, timeout: timeoutMs }, (res) => {
      res.resume()
      resolve(res.statusCode)
    })
    req.on('timeout', () => { req.destroy() })
    req.on('error', () => { resolve(undefined) })
    req.end()
  })
}
