/** Every key of a test's Redis and every value of it as text, read with SCAN: for "the plaintext is nowhere in Redis". */
import type { TestGateway } from './gateway.js'

export async function dumpRedis (gw: TestGateway): Promise<string> {
  const out: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = await gw.client.scan(cursor, 'COUNT', 1000)
    cursor = next
    for (const key of keys) {
      out.push(key)
      const type = await gw.client.type(key)
      if (type === 'string') out.push(String(await gw.client.get(key)))
      else if (type === 'hash') out.push(JSON.stringify(await gw.client.hgetall(key)))
      else if (type === 'set') out.push(JSON.stringify(await gw.client.smembers(key)))
      else if (type === 'zset') out.push(JSON.stringify(await gw.client.zrange(key, 0, -1, 'WITHSCORES')))
      else if (type === 'stream') out.push(JSON.stringify(await gw.client.xrange(key, '-', '+')))
      else if (type === 'list') out.push(JSON.stringify(await gw.client.lrange(key, 0, -1)))
      else out.push(`<${type}>`)
    }
  } while (cursor !== '0')
  return out.join('\n')
}
