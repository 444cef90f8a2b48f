/**
 * What applying a registry file would change: each record to create, change (field by
 * field, from and to) and, with `prune`, delete; and what the file may not do given
 * the registry (a user's role that would not exist; pruning a role BOT keys act with).
 *
 * The file is the whole truth for each record it names (a field it leaves out is
 * removed), except fields marked `keptWhenAbsent` (a user's status). A record it does
 * not name is kept, unless `prune`; a file with `org:` prunes that org's users and its
 * org record only, never roles (they are every org's). Prune never deletes a record
 * holding fields a file cannot carry (what an export could not show). A pruned user's
 * active personal keys are revoked with it, and named in its change; an identity active keys name is never pruned
 * (as `identities delete` without --force), and one never moves to another org (registry-identities.ts). Every change
 * names each field it sets, changes or deletes, with its value before.
 */
import {
  KINDS, KIND_ORDER, type Kind, type ApplyResult,
  type Change, type FieldChange, type FileProblem, type Plan, type RegistryFile,
  type RegistryState
} from '../model/registry-fields.js'
import { identityProblems } from './registry-identities.js'
import { storedValue } from './registry-file.js'

export function planRegistry (file: RegistryFile, state: RegistryState, prune: boolean): Plan {
  const changes: Change[] = []
  const problems: FileProblem[] = []
  for (const kind of KIND_ORDER) {
    const specs = KINDS[kind].fields
    for (const [name, want] of file.records[kind]) {
      const have = state.records[kind].get(name)
      if (have === undefined) {
        const fields: FieldChange[] = []
        for (const f of specs) {
          const to = stored(kind, f.name, want.fields[f.name]) ?? f.initial
          if (to !== undefined) fields.push({ field: f.name, to })
        }
        changes.push({ op: 'create', kind, name, fields })
        continue
      }
      const fields: FieldChange[] = []
      for (const f of specs) {
        const to = stored(kind, f.name, want.fields[f.name])
        if (to === undefined && f.keptWhenAbsent === true) continue
        const from = have[f.name]
        if (to !== from) fields.push({ field: f.name, from, to })
      }
      if (fields.length > 0) {
        changes.push({
          op: 'change',
          kind,
          name,
          fields,
          fromOrg: kind === 'user' || kind === 'identity' ? have.org : undefined
        })
      }
    }
    if (!prune) continue
    for (const [name, have] of state.records[kind]) {
      if (file.records[kind].has(name)) continue
      // a file with `org:` prunes that org's users and record only, never roles
      const otherOrg = kind === 'role' || (kind === 'org' && name !== file.org) ||
        ((kind === 'user' || kind === 'identity') && have.org !== file.org)
      if (file.org !== undefined && otherOrg) continue
      const unfiled = state.unfiled[kind].get(name)
      if (unfiled !== undefined) {
        problems.push({
          place: undefined,
          path: `${KINDS[kind].section}.${name}`,
          message: `--prune would delete ${kind} "${name}", which holds fields a registry file cannot carry ` +
            `(${unfiled.join(', ')}): keep it in the file, or remove those fields first`
        })
        continue
      }
      const naming = kind === 'identity' ? state.identityKeys.get(name) ?? [] : []
      if (naming.length > 0) {
        // as `identities delete` without --force: refused while active keys name it
        problems.push({
          place: undefined,
          path: `${KINDS[kind].section}.${name}`,
          message: `--prune would delete identity "${name}", which has ${naming.length} active key(s) ` +
            `(${naming.join(', ')}): keep it in the file, or revoke them first (or \`identities delete --force\`)`
        })
        continue
      }
      const revokesKeys = kind === 'user' ? state.personalKeys.get(name) : undefined
      changes.push({
        op: 'delete',
        kind,
        name,
        fields: specs.flatMap((f) => have[f.name] === undefined ? [] : [{ field: f.name, from: have[f.name] }]),
        fromOrg: kind === 'user' || kind === 'identity' ? have.org : undefined,
        ...revokesKeys === undefined || revokesKeys.length === 0 ? {} : { revokesKeys }
      })
    }
  }

  // references, against the registry as the file would leave it
  const deleted = new Set(changes.filter((c) => c.op === 'delete' && c.kind === 'role').map((c) => c.name))
  const roleExists = (role: string): boolean =>
    file.records.role.has(role) || (state.records.role.has(role) && !deleted.has(role))
  for (const [id, want] of file.records.user) {
    const role = want.fields.role
    if (role !== undefined && !roleExists(role)) {
      problems.push({
        place: want.fieldPlaces.role ?? want.place,
        path: `users.${id}.role`,
        message: deleted.has(role)
          ? `role "${role}" would be pruned`
          : `role "${role}" does not exist (neither in the file nor in the registry)`
      })
    }
  }
  for (const role of deleted) {
    const keys = state.botKeys.get(role) ?? []
    if (keys.length > 0) {
      problems.push({
        place: undefined,
        path: `roles.${role}`,
        message: `--prune would delete role "${role}", which active BOT keys act with (${keys.join(', ')}): ` +
          'keep it in the file, or revoke them first'
      })
    }
    const prunedUser = (id: string): boolean =>
      changes.some((c) => c.op === 'delete' && c.kind === 'user' && c.name === id)
    const kept = (id: string): boolean => !file.records.user.has(id) && !prunedUser(id)
    const users = [...state.records.user].filter(([id, u]) => u.role === role && kept(id)).map(([id]) => id)
    if (users.length > 0) {
      problems.push({
        place: undefined,
        path: `roles.${role}`,
        message: `--prune would delete role "${role}", which users the file keeps act with (${users.join(', ')})`
      })
    }
  }
  problems.push(...identityProblems(file, state, changes))
  return { changes, problems }
}

function stored (kind: Kind, field: string, value: string | undefined): string | undefined {
  return value === undefined ? undefined : storedValue(kind, field, value)
}

/**
 * The answer to a plan: its changes, or every problem, the file's own and those of its references, in the order of
 * the file.
 */
export function planResult (own: readonly FileProblem[], plan: Plan): ApplyResult {
  // (those at no place, what --prune would delete, last)
  const at = (p: FileProblem): number =>
    p.place === undefined ? Number.MAX_SAFE_INTEGER : p.place.line * 100_000 + p.place.col
  const problems = [...own, ...plan.problems].sort((a, b) => at(a) - at(b))
  return problems.length > 0 ? { ok: false, problems } : { ok: true, changes: plan.changes }
}
