/**
 * The registry as code (docs/registry-as-code.md), admin only: a registry file's plan
 * (what applying it would change now, or its problems), its apply, and the registry's
 * roles, org records, users and identities as a file would hold them (src/admin/as-code/ reads and
 * writes the YAML). The file's checks and its plan are the policy's
 * (policy/registry-file.ts, policy/registry-plan.ts).
 *
 * An apply makes exactly the plan's changes, in one MULTI/EXEC with one audit entry
 * `registry.apply`, or nothing at all. It is atomic against concurrent edits (the CLI,
 * the admin API, redis-cli): the index sets and every record read are WATCHed before
 * they are read, on a connection of its own, so a change that lands between the read
 * and the EXEC aborts the EXEC; the plan is then made again on what is there now and
 * applied (at most ATTEMPTS times). An edit thus lands wholly before the apply or
 * wholly after it, never in between, and the file is never half applied.
 */
import { AdminError } from '../model/errors.js'
import { KIND_ORDER, type ApplyResult, type Change, type Kind, type RegistryFile } from '../model/registry-fields.js'
import { registryFileProblems } from '../policy/registry-file.js'
import { planRegistry, planResult } from '../policy/registry-plan.js'
import { requireAdmin } from '../policy/scope-rules.js'
import { endsSessions, indexOf, readState, recordKey, writeChange } from '../store/registry-state.js'
import { watching } from '../store/transactions.js'
import { audited, type ActionContext } from './context.js'

const ATTEMPTS = 5

export interface ApplyOptions {
  prune: boolean
  /** runs between the read and the EXEC (tests make a concurrent edit land there) */
  beforeCommit?: (attempt: number) => Promise<void>
}

/** The plan against the registry now, without writing. */
export async function planRegistryFile (a: ActionContext, file: RegistryFile, prune: boolean): Promise<ApplyResult> {
  requireAdmin(a.scope, 'planning a registry file')
  return planResult(registryFileProblems(file), planRegistry(file, await readState(a.store.redis, a.store.keys), prune))
}

/** Makes exactly the plan's changes, atomically, audited as `registry.apply`; nothing on any problem. */
export async function applyRegistryFile (a: ActionContext, file: RegistryFile, o: ApplyOptions): Promise<ApplyResult> {
  return await audited(a, 'registry.apply', 'registry', async () => {
    requireAdmin(a.scope, 'applying a registry file')
    if (registryFileProblems(file).length > 0) return await planRegistryFile(a, file, o.prune)
    for (let attempt = 1; ; attempt++) {
      try {
        return await applyOnce(a, file, o, attempt)
      } catch (err: unknown) {
        if (!(err instanceof AdminError) || err.kind !== 'conflict' || attempt >= ATTEMPTS) throw err
      }
    }
  })
}

async function applyOnce (
  a: ActionContext,
  file: RegistryFile,
  o: ApplyOptions,
  attempt: number
): Promise<ApplyResult> {
  const { keys } = a.store
  return await watching(a.store, async (w) => {
    const conn = await w.connection()
    // the index sets, every record named by the file, and every one there now, WATCHed before they are read
    await conn.watch(...KIND_ORDER.map((k) => indexOf(keys, k)), keys.keys)
    const named = KIND_ORDER.flatMap((kind) => [...file.records[kind].keys()].map((n) => recordKey(keys, kind, n)))
    if (named.length > 0) await conn.watch(...named)
    const state = await readState(
      conn,
      keys,
      async (present) => { if (present.length > 0) await conn.watch(...present) }
    )
    const plan = planRegistry(file, state, o.prune)
    if (plan.problems.length > 0) return planResult([], plan)
    if (plan.changes.length === 0) return { ok: true, changes: [] }
    // the sessions a user's deletion or deactivation ends: their set WATCHed, so a sign-in meanwhile retries
    const ending = plan.changes.filter(endsSessions)
    const sessionSets = ending.map((c) => keys.userSessions(c.name))
    if (sessionSets.length > 0) await conn.watch(...sessionSets)
    const sessions = await Promise.all(sessionSets.map(async (set) => await conn.smembers(set)))
    const sessionsOf = new Map(ending.map((c, i) => [c.name, sessions[i] ?? []]))
    await o.beforeCommit?.(attempt)
    const tx = w.multi()
    const now = Date.now()
    for (const change of plan.changes) writeChange(a.store, tx, change, sessionsOf.get(change.name) ?? [], now)
    const list = (op: Change['op']): string =>
      plan.changes.filter((c) => c.op === op).map((c) => `${c.kind}:${c.name}`).join(' ')
    const revoked = plan.changes.flatMap((c) => c.revokesKeys ?? [])
    const detail = {
      created: list('create'),
      changed: list('change'),
      deleted: list('delete'),
      prune: String(o.prune),
      ...revoked.length === 0 ? {} : { revoked_keys: revoked.join(' ') },
      ...file.org === undefined ? {} : { org: file.org }
    }
    tx.xadd(...a.store.audit.changeArgs('registry.apply', 'registry', 'ok', detail, file.org))
    await w.commit(tx)
    return { ok: true, changes: plan.changes }
  })
}

/**
 * What an export holds: `org` given, that org's record, users and identities and the roles its users act with; else
 * every record.
 */
export interface RegistryExport {
  org: string | undefined
  records: Record<Kind, Array<[string, Record<string, string>]>>
}

/**
 * Roles, org records, users and identities, as a registry file holds them (never a key, a secret or a hash: no key
 * record is read).
 */
export async function exportRegistry (a: ActionContext, o: { org?: string | undefined } = {}): Promise<RegistryExport> {
  requireAdmin(a.scope, 'exporting the registry')
  const state = await readState(a.store.redis, a.store.keys)
  const users = [...state.records.user].filter(([, u]) => o.org === undefined || u.org === o.org)
  const rolesUsed = new Set(users.map(([, u]) => u.role))
  return {
    org: o.org,
    records: {
      role: [...state.records.role].filter(([name]) => o.org === undefined || rolesUsed.has(name)),
      org: [...state.records.org].filter(([name]) => o.org === undefined || name === o.org),
      user: users,
      identity: [...state.records.identity].filter(([, i]) => o.org === undefined || i.org === o.org)
    }
  }
}
