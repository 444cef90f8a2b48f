/**
 * `keygate registry export`: the registry as a registry file (registry-file.ts reads it
 * back): the roles, org records, users and identities the export action picked
 * (src/admin/actions/registry-files.ts), with the fields of model/registry-fields.ts.
 * Never a key, a secret or a hash. With an org, the file says `org:`, so that applying
 * it touches that org only. An identity's `meta` is its JSON text.
 */
import { Document } from 'yaml'
import type { RegistryExport } from '../actions/index.js'
import { KINDS, KIND_ORDER } from '../model/registry-fields.js'

export function registryYaml (picked: RegistryExport): string {
  const out: Record<string, unknown> = {}
  if (picked.org !== undefined) out.org = picked.org
  for (const kind of KIND_ORDER) {
    const section: Record<string, Record<string, unknown>> = {}
    for (const [name, fields] of picked.records[kind]) {
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
  doc.commentBefore = ' keygate registry: roles, org records, users and identities (never keys).' +
    ' keygate registry plan|apply <file>'
  return doc.toString({ lineWidth: 0 })
}
