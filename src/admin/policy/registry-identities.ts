/**
 * What a registry file may not do with identities, given the registry (docs/identities.md, the rules
 * `identities put` keeps, policy/identities.ts): move one to another org, or give one external id to two
 * identities of an org, as the file would leave the registry.
 */
import type { Change, FileProblem, RegistryFile, RegistryState } from '../model/registry-fields.js'

export function identityProblems (file: RegistryFile, state: RegistryState, changes: readonly Change[]): FileProblem[] {
  const problems: FileProblem[] = []
  const pruned = new Set(changes.filter((c) => c.op === 'delete' && c.kind === 'identity').map((c) => c.name))
  // org + external id -> the identity holding it, as the file would leave the registry
  const holders = new Map<string, string>()
  for (const [id, have] of state.records.identity) {
    if (file.records.identity.has(id) || pruned.has(id)) continue
    if (have.org !== undefined && have.external_id !== undefined) holders.set(`${have.org}\n${have.external_id}`, id)
  }
  for (const [id, want] of file.records.identity) {
    const have = state.records.identity.get(id)
    const org = want.fields.org
    if (have?.org !== undefined && org !== undefined && org !== have.org) {
      problems.push({
        place: want.fieldPlaces.org ?? want.place,
        path: `identities.${id}.org`,
        message: `identity "${id}" is in org "${have.org}": an identity never moves to another org`
      })
      continue
    }
    const external = want.fields.external_id
    if (org === undefined || external === undefined) continue
    const holder = holders.get(`${org}\n${external}`)
    if (holder !== undefined && holder !== id) {
      problems.push({
        place: want.fieldPlaces.external_id ?? want.place,
        path: `identities.${id}.external_id`,
        message: `external id "${external}" already names identity "${holder}" in org ${org}`
      })
      continue
    }
    holders.set(`${org}\n${external}`, id)
  }
  return problems
}
