/**
 * `keygate registry export`: the registry as a registry file (registry-file.ts reads it
 * back): roles, org records and users, with the fields of fields.ts. Never a key, a
 * secret or a hash: no key record is read. `org`: that org's record and users, and the
 * roles they act with; the file then says `org:`, so that applying it touches that org
 * only.
 */
import { Document } from 'yaml'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { KINDS, KIND_ORDER, type Kind } from './fields.js'
import { readState } from './registry-state.js'

export async function exportRegistry (redis: RegistryClient, keys: RedisKeys, o: { org?: string | undefined } = {}): Promise<string> {
  const state = await readState(redis, keys)
  const out: Record<string, unknown> = {}
  if (o.org !== undefined) out.org = o.org
  const users = [...state.records.user].filter(([, u]) => o.org === undefined || u.org === o.org)
  const rolesUsed = new Set(users.map(([, u]) => u.role))
  const pick: Record<Kind, Array<[string, Record<string, string>]>> = {
    role: [...state.records.role].filter(([name]) => o.org === undefined || rolesUsed.has(name)),
    org: [...state.records.org].filter(([name]) => o.org === undefined || name === o.org),
    user: users
  }
  for (const kind of KIND_ORDER) {
    const section: Record<string, Record<string, unknown>> = {}
    for (const [name, fields] of pick[kind]) {
      const record: Record<string, unknown> = {}
      for (const f of KINDS[kind].fields) {
        const v = fields[f.name]
        // (a user's status is written when it is not the default: a file that does not say keeps it)
        if (v === undefined || (f.keptWhenAbsent === true && v === f.initial)) continue
        record[f.name] = f.list === true ? v.split(' ').filter((p) => p !== '') : v
      }
      section[name] = record
    }
    out[KINDS[kind].section] = section
  }
  const doc = new Document(out)
  doc.commentBefore = ' keygate registry: roles, org records and users (never keys). keygate registry plan|apply <file>'
  return doc.toString({ lineWidth: 0 })
}
