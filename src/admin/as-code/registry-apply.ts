/**
 * Applying a registry file: exactly the plan's changes, in one MULTI/EXEC with one
 * audit entry `registry.apply`, or nothing at all.
 *
 * Atomic against concurrent edits (the CLI, the admin API, redis-cli): the index sets
 * and every record read are WATCHed before they are read, on a connection of its own
 * (transactions.ts's `watching`), so a change that lands between the read and the EXEC
 * aborts the EXEC; the plan is then made again on what is there now and applied (at
 * most ATTEMPTS times). An edit thus lands wholly before the apply or wholly after it,
 * never in between, and the file is never half applied.
 */
import type { ChainableCommander } from 'ioredis'
import { AdminError } from '../model/errors.js'
import { commit, watching, type StoreContext } from '../store/transactions.js'
import type { FileProblem, RegistryFile } from './registry-file.js'
import { planRegistry, type Change } from './registry-plan.js'
import { indexOf, readState, recordKey } from './registry-state.js'

const ATTEMPTS = 5

export type ApplyResult = { ok: true, changes: Change[] } | { ok: false, problems: FileProblem[] }

export interface ApplyOptions {
  prune: boolean
  /** runs between the read and the EXEC (tests make a concurrent edit land there) */
  beforeCommit?: (attempt: number) => Promise<void>
}

/** The plan against the registry now, without writing. */
export async function planFile (ctx: StoreContext, file: RegistryFile, prune: boolean): Promise<ApplyResult> {
  const plan = planRegistry(file, await readState(ctx.redis, ctx.keys), prune)
  const problems = allProblems(file.problems, plan.problems)
  return problems.length > 0 ? { ok: false, problems } : { ok: true, changes: plan.changes }
}

/** The file's own problems and those of its references, in the order of the file (those at no place last). */
function allProblems (own: FileProblem[], references: FileProblem[]): FileProblem[] {
  const at = (p: FileProblem): number => p.place === undefined ? Number.MAX_SAFE_INTEGER : p.place.line * 100_000 + p.place.col
  return [...own, ...references].sort((a, b) => at(a) - at(b))
}

export async function applyFile (ctx: StoreContext, file: RegistryFile, o: ApplyOptions): Promise<ApplyResult> {
  if (file.problems.length > 0) return await planFile(ctx, file, o.prune)
  for (let attempt = 1; ; attempt++) {
    try {
      return await watching(ctx, 'registry-apply', (['role', 'org', 'user'] as const).map((k) => indexOf(ctx.keys, k)).concat(ctx.keys.keys), async (conn) => {
        // every record named by the file, and every one there now, WATCHed before it is read
        const named = (['role', 'org', 'user'] as const).flatMap((kind) => [...file.records[kind].keys()].map((n) => recordKey(ctx.keys, kind, n)))
        if (named.length > 0) await conn.watch(...named)
        const state = await readState(conn, ctx.keys, async (present) => { if (present.length > 0) await conn.watch(...present) })
        const plan = planRegistry(file, state, o.prune)
        if (plan.problems.length > 0) return { ok: false, problems: plan.problems }
        if (plan.changes.length === 0) return { ok: true, changes: [] }
        await o.beforeCommit?.(attempt)
        const tx = conn.multi()
        for (const change of plan.changes) write(ctx, tx, change)
        const list = (op: Change['op']): string => plan.changes.filter((c) => c.op === op).map((c) => `${c.kind}:${c.name}`).join(' ')
        tx.xadd(...ctx.audit.changeArgs('registry.apply', 'registry', 'ok', { created: list('create'), changed: list('change'), deleted: list('delete'), prune: String(o.prune), ...file.org === undefined ? {} : { org: file.org } }, file.org))
        await commit(tx)
        return { ok: true, changes: plan.changes }
      })
    } catch (err: unknown) {
      if (!(err instanceof AdminError) || err.kind !== 'conflict' || attempt >= ATTEMPTS) throw err
    }
  }
}

function write (ctx: StoreContext, tx: ChainableCommander, c: Change): void {
  const key = recordKey(ctx.keys, c.kind, c.name)
  const index = indexOf(ctx.keys, c.kind)
  if (c.op === 'delete') {
    tx.del(key).srem(index, c.name)
    if (c.kind === 'user' && c.fromOrg !== undefined) tx.srem(ctx.keys.orgUsers(c.fromOrg), c.name)
    return
  }
  const set: Record<string, string> = {}
  const removed: string[] = []
  for (const f of c.fields) {
    if (f.to === undefined) removed.push(f.field)
    else set[f.field] = f.to
  }
  if (Object.keys(set).length > 0) tx.hset(key, set)
  if (removed.length > 0) tx.hdel(key, ...removed)
  tx.sadd(index, c.name)
  if (c.kind === 'user' && set.org !== undefined) {
    tx.sadd(ctx.keys.orgUsers(set.org), c.name)
    if (c.fromOrg !== undefined && c.fromOrg !== set.org) tx.srem(ctx.keys.orgUsers(c.fromOrg), c.name)
  }
}
