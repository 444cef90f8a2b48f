/**
 * An in-memory registry reader for the decision's unit tables: key id -> the chain
 * Redis would return (registry-reader.ts), or a failure. The registry's own tests
 * read a real redis-server; this only serves the decision core its records.
 */
import type { Chain, RegistryReader } from '../../src/registry/registry-reader.js'
import { NO_ORG_RECORD } from '../../src/registry/records.js'

export class MemoryRegistry {
  readonly chains = new Map<string, Chain>()
  /** set: every read fails with it (an unreachable Redis, a record of the wrong type) */
  failure: unknown = undefined
  reads = 0

  async fetchChain (keyId: string): Promise<Chain> {
    this.reads++
    if (this.failure !== undefined) throw this.failure
    return this.chains.get(keyId) ?? { key: null, roleName: '', role: null, org: NO_ORG_RECORD }
  }

  /** This, as the reader a resolver takes. */
  get reader (): RegistryReader {
    return this as unknown as RegistryReader
  }
}
