/**
 * A key import decided over a snapshot of every record its records name: the owners,
 * the creators, the orgs, and the lookups of the tokens already imported. All or none:
 * every problem is named with its record, and nothing is written unless every record
 * is good. Two passes, in the order a request meets them:
 *
 *   1. who may, references   each record exactly as creating that key would be
 *                            (key-creation.ts: an admin imports any key as it is; an
 *                            org admin the keys it could create, its `expires_at` taken
 *                            as the equivalent `expires_in`), then its references. A
 *                            record refused by the scope makes the import a 403.
 *   2. the registry          each token not imported yet, each owner resolved (an
 *                            active user, an existing role; a personal key's stated
 *                            org its user's), each expiry within its
 *                            org's key policy (none asked means the cap).
 */
import { isoTimestamp, parseTimestamp } from '../../registry/records.js'
import { AdminError, type ErrorDetail, type RefusalNote } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { capReason, defaultExpiry, keyCapOf } from './key-expiry.js'
import { keyCreationTarget, keyToCreate } from './key-creation.js'
import { resolveOwner } from './key-records.js'
import { keyReferences } from './references.js'
import { importRefused, lineProblem, type ImportInput } from './import-records.js'
import { requireOrgAdmin } from './scope-rules.js'

/** One key to write: its input as allowed, its org and its record (all but its hash: the token's SHA-256). */
export interface ImportedRecord {
  input: ImportInput
  org: string
  record: Record<string, string>
}

export function decideImport (
  s: AdminScope, snap: Snapshot, inputs: readonly ImportInput[], o: {
    selfServiceMaxTtlMs: number,
    actor: string,
    now: number
  }
): { records: ImportedRecord[], warnings: ErrorDetail[] } {
  requireOrgAdmin(s, 'importing keys')
  const { allowed, warnings } = allowedRecords(s, snap, inputs, o)
  return { records: importedRecords(s, snap, allowed, o), warnings }
}

/**
 * What a key import may create, a record at a time: exactly what creating that key
 * would (keyToCreate) for the caller, its expiry (`expires_at`) taken as the
 * equivalent `expires_in`. An admin imports any key as it is.
 */
export function keyToImport (
  s: AdminScope,
  snap: Snapshot,
  input: ImportInput,
  o: { selfServiceMaxTtlMs: number, now: number }
): ImportInput {
  if (s.scope === 'admin') return input
  const at = input.expiresAt === undefined ? undefined : parseTimestamp(input.expiresAt)
  const expiresInMs = at === undefined ? undefined : Math.max(0, at - o.now)
  const created = keyToCreate(
    s,
    snap,
    { type: input.type, user: input.user, role: input.role, org: input.org, name: input.name, expiresInMs },
    o.selfServiceMaxTtlMs
  )
  return {
    ...input,
    user: created.user,
    role: created.role,
    org: created.org,
    createdBy: created.createdBy,
    scope: created.scope,
    expiresWithinMs: created.expiresWithinMs
  }
}

/**
 * Pass 1: each record's scope and references; each record refused by the scope is counted as the key creation it
 * would be.
 */
function allowedRecords (
  s: AdminScope,
  snap: Snapshot,
  inputs: readonly ImportInput[],
  o: { selfServiceMaxTtlMs: number, now: number }
): { allowed: ImportInput[], warnings: ErrorDetail[] } {
  const problems: ErrorDetail[] = []
  const warnings: ErrorDetail[] = []
  const allowed: ImportInput[] = []
  const denials: RefusalNote[] = []
  let forbidden: AdminError | undefined
  for (const input of inputs) {
    try {
      const checked = keyToImport(s, snap, input, o)
      warnings.push(...keyReferences(snap, checked).map((w) => lineProblem(input.place, w.field ?? 'key', w.reason)))
      allowed.push(checked)
    } catch (err: unknown) {
      if (!(err instanceof AdminError)) throw err
      if (err.kind === 'forbidden') forbidden ??= err
      if (err.audit === 'denied') {
        denials.push({
          result: 'denied',
          why: err.message,
          action: 'key.create',
          target: keyCreationTarget(s, input)
        })
      }
      for (const d of err.details ?? [{ reason: err.message }]) {
        problems.push(lineProblem(input.place, d.field === 'expires_in' ? 'expires_at' : d.field ?? 'record', d.reason))
      }
    }
  }
  if (forbidden !== undefined) throw importRefused(problems, 'forbidden', forbidden.needs, denials)
  if (problems.length > 0) {
    throw importRefused(
      problems,
      'invalid',
      undefined,
      [...denials, { result: 'error', why: `${problems.length} problem(s)` }]
    )
  }
  return { allowed, warnings }
}

/** Pass 2: against the registry: tokens imported already, owners, the orgs' key policies. */
function importedRecords (
  s: AdminScope,
  snap: Snapshot,
  inputs: readonly ImportInput[],
  o: { actor: string, now: number }
): ImportedRecord[] {
  const problems: ErrorDetail[] = []
  const orgs = inputs.map((input) => {
    const existing = snap.imported.get(input.sha256)
    if (existing !== undefined) {
      // the id of another org's key is no org admin's to learn
      const visible = s.scope === 'admin' || snap.keys.get(existing)?.org === s.org
      problems.push(lineProblem(input.place, 'key', `already imported${visible ? ` as key ${existing}` : ''}`))
    }
    try {
      const org = resolveOwner(snap, input)
      if (input.statedOrg !== undefined && input.statedOrg !== org) {
        problems.push(lineProblem(input.place, 'org', `user "${input.user ?? ''}" is not in org "${input.statedOrg}"`))
      }
      return org
    } catch (err: unknown) {
      if (!(err instanceof AdminError)) throw err
      problems.push(lineProblem(input.place, input.type === 'personal' ? 'user' : 'role', err.message))
      return ''
    }
  })
  // the orgs' key policies: an expiry beyond the cap is refused, none asked means the cap
  const caps = new Map<string, number | undefined>()
  for (const org of new Set(orgs.filter((org) => org !== ''))) caps.set(org, keyCapOf(org, snap.orgs.get(org)))
  const expiries = inputs.map((input, n) => {
    const org = orgs[n] as string
    const cap = caps.get(org)
    const at = input.expiresAt === undefined ? undefined : parseTimestamp(input.expiresAt)
    if (at === undefined) {
      const within = defaultExpiry(cap, input.expiresWithinMs)
      return within === undefined ? undefined : isoTimestamp(o.now + within)
    }
    if (cap !== undefined && at > o.now + cap) {
      problems.push(lineProblem(
        input.place,
        'expires_at',
        capReason(org, cap)
      ))
    }
    return input.expiresAt
  })
  if (problems.length > 0) throw importRefused(problems)
  return inputs.map((input, n) => {
    const org = orgs[n] as string
    const record: Record<string, string> = {
      type: input.type,
      imported: input.from,
      org,
      name: input.name ?? '',
      status: 'active',
      created_at: isoTimestamp(o.now),
      created_by: input.createdBy ?? o.actor
    }
    if (input.type === 'personal') record.user = input.user as string
    else record.role = input.role as string
    const expiresAt = expiries[n]
    if (expiresAt !== undefined) record.expires_at = expiresAt
    if (input.scope !== undefined) record.scope = input.scope.join(' ')
    return { input, org, record }
  })
}
