/**
 * The admin policy's unit tables (test/unit/admin/policy/): principals of each scope, a
 * snapshot of a small registry, and a verdict of a policy call as plain data (what it
 * allows, or the refusal: kind, message, needs, details and how it is audited). No Redis.
 */
import type { Test } from 'tap'
import { Grants } from '../../src/registry/records.js'
import { AdminError } from '../../src/admin/model/errors.js'
import { FULL_ADMIN, type AdminScope } from '../../src/admin/model/principal.js'
import { snapshotOf, type Snapshot, type SnapshotRecords } from '../../src/admin/model/snapshot.js'

export const ADMIN: AdminScope = FULL_ADMIN
/** olga, acme's org admin (users:*, keygate:org:admin, keygate:keys:self) on her personal key */
export const ORG: AdminScope = {
  scope: 'org',
  org: 'acme',
  grants: new Grants(['users:*', 'keygate:org:admin', 'keygate:keys:self']),
  user: 'olga'
}
/** a BOT key of acme's with keygate:org:admin: no user */
export const ORG_BOT: AdminScope = {
  scope: 'org',
  org: 'acme',
  grants: new Grants(['users:*', 'keygate:org:admin']),
  user: undefined
}
/** sam's personal key in acme (users:read, keygate:keys:self) */
export const SELF: AdminScope = {
  scope: 'self',
  org: 'acme',
  grants: new Grants(['users:read', 'keygate:keys:self']),
  user: 'sam'
}

/**
 * The registry the tables decide over:
 *   roles  reader (users:read), writer (users:*), orgadmin (users:* keygate:org:admin keygate:keys:self),
 *          selfreader (users:read keygate:keys:self), boss (keygate:admin)
 *   users  olga (acme, orgadmin), sam (acme, selfreader), alice (acme, reader), bob (acme, writer),
 *          gina (globex, reader), root (acme, boss), dee (acme, reader, deactivated), half (acme, no role)
 *   orgs   acme (a record), capped (key_max_ttl 30d), broken (key_max_ttl soon)
 *   keys   alice-key (personal, alice), sam-key (personal, sam), bot-reader (acme, reader, created by
 *          sam), bot-writer (acme, writer), bot-boss (acme, boss), globex-bot (globex, reader),
 *          root-key (personal, root), old-key (revoked)
 */
export const WORLD: SnapshotRecords = {
  roles: {
    reader: { permissions: 'users:read' },
    writer: { permissions: 'users:*' },
    orgadmin: { permissions: 'users:* keygate:org:admin keygate:keys:self' },
    selfreader: { permissions: 'users:read keygate:keys:self' },
    boss: { permissions: 'keygate:admin' }
  },
  users: {
    olga: { org: 'acme', role: 'orgadmin', status: 'active' },
    sam: { org: 'acme', role: 'selfreader', status: 'active' },
    alice: { org: 'acme', role: 'reader', status: 'active' },
    bob: { org: 'acme', role: 'writer', status: 'active' },
    gina: { org: 'globex', role: 'reader', status: 'active' },
    root: { org: 'acme', role: 'boss', status: 'active' },
    dee: { org: 'acme', role: 'reader', status: 'deactivated' },
    half: { org: 'acme', status: 'active' }
  },
  orgs: {
    acme: { name: 'Acme' },
    capped: { key_max_ttl: '30d' },
    broken: { key_max_ttl: 'soon' }
  },
  keys: {
    'alice-key': {
      type: 'personal',
      org: 'acme',
      user: 'alice',
      status: 'active',
      name: 'laptop',
      created_by: 'cli:root'
    },
    'sam-key': { type: 'personal', org: 'acme', user: 'sam', status: 'active' },
    'bot-reader': { type: 'bot', org: 'acme', role: 'reader', status: 'active', created_by: 'user:sam' },
    'bot-writer': { type: 'bot', org: 'acme', role: 'writer', status: 'active' },
    'bot-boss': { type: 'bot', org: 'acme', role: 'boss', status: 'active' },
    'globex-bot': { type: 'bot', org: 'globex', role: 'reader', status: 'active' },
    'root-key': { type: 'personal', org: 'acme', user: 'root', status: 'active' },
    'old-key': { type: 'bot', org: 'acme', role: 'reader', status: 'revoked' }
  }
}

/** The world, with some records changed or added (`null`: removed). */
export function world (changes: { [K in keyof SnapshotRecords]?: Record<string, Record<string, string> | string | null> } = {}): Snapshot {
  const merged: SnapshotRecords = {}
  for (const kind of ['users', 'roles', 'orgs', 'keys', 'identities', 'imported', 'emails'] as const) {
    const records: Record<string, unknown> = { ...WORLD[kind] }
    for (const [name, value] of Object.entries(changes[kind] ?? {})) {
      if (value === null) delete records[name]
      else records[name] = value
    }
    Object.assign(merged, { [kind]: records })
  }
  return snapshotOf(merged)
}

export interface Refused {
  kind: string
  message: string
  needs?: string | undefined
  details?: ReadonlyArray<{ field?: string, reason: string }> | undefined
  audit: unknown
}

export type Verdict<T> = { ok: true, value: T } | { ok: false, refused: Refused }

/** A policy call's verdict: what it allows, or the refusal. */
export function verdict<T> (fn: () => T): Verdict<T> {
  try {
    return { ok: true, value: fn() }
  } catch (err: unknown) {
    if (!(err instanceof AdminError)) throw err
    return {
      ok: false,
      refused: { kind: err.kind, message: err.message, needs: err.needs, details: err.details, audit: err.audit }
    }
  }
}

/** The expected verdict of an allowed call (`value`: a pattern of what it returns, when given). */
export function allowed (value?: unknown): { ok: true, value?: unknown } {
  return value === undefined ? { ok: true } : { ok: true, value }
}

/** The expected verdict of a refused call: a pattern of the refusal. */
export function refused (r: Partial<Record<keyof Refused, unknown>>): { ok: false, refused: unknown } {
  return { ok: false, refused: r }
}

/**
 * Asserts a verdict against its row's pattern: `t.match` (objects partially, strings
 * against a RegExp), and every list of the pattern exactly as long as the verdict's
 * (a match alone takes a list as a prefix).
 */
export function judge (t: Test, actual: unknown, expected: unknown, what: string): void {
  t.match(actual, expected, what)
  const lists: string[] = []
  const walk = (a: unknown, e: unknown, path: string): void => {
    if (Array.isArray(e)) {
      if (!Array.isArray(a) || a.length !== e.length) lists.push(`${path}: ${Array.isArray(a) ? a.length : 'none'} entries, not ${e.length}`)
      else e.forEach((x, i) => { walk(a[i], x, `${path}[${i}]`) })
    } else if (typeof e === 'object' && e !== null && !(e instanceof RegExp) && typeof a === 'object' && a !== null) {
      for (const [k, v] of Object.entries(e)) walk((a as Record<string, unknown>)[k], v, `${path}.${k}`)
    }
  }
  walk(actual, expected, 'verdict')
  t.same(lists, [], `${what}: every list as long as the row's`)
}
