/**
 * What the gateway asked Redis while a test acted: MONITOR, filtered to the
 * gateway's own connections (so other clients of a shared Redis do not count).
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { WRITE_CONNECTION_NAME } from '../../src/admin/store/write-connections.js'
import type { TestGateway } from './gateway.js'

/**
 * Runs `action` and returns the Redis commands the gateway's own connections sent
 * meanwhile (its periodic PING aside), seen through MONITOR and filtered by the
 * connections' addresses, so other clients of a shared Redis do not count: its shared
 * connection, and those an admin change reads and writes on (named
 * `keygate-admin-write`, src/admin/store/write-connections.ts), open already or opened
 * meanwhile.
 */
export async function watchGatewayRedis<T> (gw: TestGateway, action: () => Promise<T>): Promise<{ result: T, commands: string[] }> {
  const stream = (gw.app.redis as Redis).stream // (a standalone gateway)
  const sources = new Set([`${stream.localAddress ?? ''}:${stream.localPort ?? ''}`])
  for (const line of (await gw.client.client('LIST') as string).split('\n')) {
    if (line.includes(` name=${WRITE_CONNECTION_NAME} `)) sources.add(/addr=(\S+)/.exec(line)?.[1] ?? '')
  }
  // A connection of its own in monitor mode, with its error handler attached before it
  // connects: ioredis can take a monitor line that arrives in the same packet as
  // MONITOR's OK for a stray reply ("Command queue state error"). Such lines predate
  // the action (the sentinel below marks where it starts), so the error is ignored.
  const monitor = new Redis(gw.redis.url, { monitor: true, maxRetriesPerRequest: 0 })
  monitor.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    monitor.once('monitoring', () => { resolve() })
    monitor.once('end', () => { reject(new Error('the MONITOR connection closed')) })
  })
  const commands: string[] = []
  const sentinel = `sentinel-${randomBytes(6).toString('hex')}`
  let seenSentinel: () => void = () => {}
  const sentinelSeen = new Promise<void>((resolve) => { seenSentinel = resolve })
  monitor.on('monitor', (_time: string, args: string[], from: string) => {
    if (args[0]?.toLowerCase() === 'echo' && args[1] === sentinel) seenSentinel()
    const setName = args[0]?.toLowerCase() === 'client' && args[1]?.toLowerCase() === 'setname'
    if (setName && args[2] === WRITE_CONNECTION_NAME) sources.add(from)
    if (sources.has(from) && args[0]?.toLowerCase() !== 'ping') commands.push(args.join(' '))
  })
  try {
    const result = await action()
    // Redis feeds MONITOR in execution order: once the sentinel is seen, so is everything before it.
    await gw.client.echo(sentinel)
    await sentinelSeen
    return { result, commands }
  } finally {
    monitor.disconnect()
  }
}
