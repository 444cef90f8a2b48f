/**
 * What the gateway asked Redis while a test acted: MONITOR, filtered to the
 * gateway's own connection (so other clients of a shared Redis do not count).
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import type { TestGateway } from './gateway.js'

/**
 * Runs `action` and returns the Redis commands the gateway's own connection sent
 * meanwhile (its periodic PING aside), seen through MONITOR and filtered by the
 * connection's address, so other clients of a shared Redis do not count.
 */
export async function watchGatewayRedis<T> (gw: TestGateway, action: () => Promise<T>): Promise<{ result: T, commands: string[] }> {
  const stream = (gw.app.redis as Redis).stream // (a standalone gateway)
  const source = `${stream.localAddress ?? ''}:${stream.localPort ?? ''}`
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
    if (from === source && args[0]?.toLowerCase() !== 'ping') commands.push(args.join(' '))
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
