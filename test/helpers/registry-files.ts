/**
 * For the registry-as-code tests: registry files written to a temporary folder, and a
 * dump of every Redis key under a gateway's prefix (what "nothing written" compares).
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestGateway } from './gateway.js'

const dir = mkdtempSync(join(tmpdir(), 'keygate-registry-'))
let files = 0

/** Writes `text` to a new registry file; returns its path. */
export function registryFile (text: string): string {
  const path = join(dir, `registry-${files++}.yaml`)
  writeFileSync(path, text)
  return path
}

/** Every key under the gateway's prefix and its value. */
export async function dumpRegistry (gw: TestGateway): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for (const key of (await gw.client.keys(`${gw.prefix}*`)).sort()) {
    const type = await gw.client.type(key)
    out[key] = type === 'hash' ? await gw.client.hgetall(key) : type === 'set' ? (await gw.client.smembers(key)).sort() : type === 'stream' ? await gw.client.xlen(key) : await gw.client.dump(key)
  }
  return out
}
