/**
 * What a role grants and a key's scope narrows: permissions with wildcards (`*`,
 * `resource:*`), the reserved `keygate:` namespace granted only by name, and the one
 * intersection of a role's grants and a scope. Parsed once per record (records.ts).
 */
/**
 * Granted permissions: `*` covers everything, `users:*` every `users:` action, except
 * the reserved `keygate:` namespace (administration), which is granted only by name:
 * no wildcard ever makes a key an administrator.
 */
export class Grants {
  readonly all: boolean
  private readonly exact: Set<string>
  private readonly prefixes: string[]

  /** `permissions`: as the role record lists them */
  constructor (readonly permissions: readonly string[]) {
    this.all = permissions.includes('*')
    this.exact = new Set(permissions.filter((p) => !p.endsWith('*')))
    this.prefixes = permissions.filter((p) => p.endsWith(':*')).map((p) => p.slice(0, -1))
  }

  private lastRole: Grants | undefined
  private lastWithin: Grants | undefined
  private within: WeakMap<Grants, Grants> | undefined

  /**
   * These grants as a key's scope over its role's: what both grant (scopedGrants).
   * Worked out once per (scope, role) pair, the last pair at hand.
   */
  narrow (role: Grants): Grants {
    if (role === this.lastRole) return this.lastWithin as Grants
    this.within ??= new WeakMap()
    let narrowed = this.within.get(role)
    if (narrowed === undefined) {
      narrowed = new Grants(bothGrant(role, this))
      this.within.set(role, narrowed)
    }
    this.lastRole = role
    this.lastWithin = narrowed
    return narrowed
  }

  has (permission: string): boolean {
    if (this.exact.has(permission)) return true
    if (permission.startsWith(RESERVED_NAMESPACE)) return false
    if (this.all) return true
    for (const prefix of this.prefixes) if (permission.startsWith(prefix)) return true
    return false
  }

  hasAll (permissions: readonly string[]): boolean {
    for (const p of permissions) if (!this.has(p)) return false
    return true
  }
}

/**
 * The one intersection of a role's grants and a key's scope, for the gateway's
 * decision and the admin scopes alike: a permission is granted when both grant it,
 * each by the permission grammar's rules (`*`, `resource:*`, `keygate:` by name only). No scope:
 * the role's grants themselves.
 */
export function scopedGrants (role: Grants, scope: Grants | undefined): Grants {
  return scope === undefined ? role : scope.narrow(role)
}

/**
 * The permissions both grant, as one list: each side's permissions the other grants.
 * A permission granted by both is granted through one of these: when neither grants
 * it by name, each grants it through a wildcard, and the narrower of the two wildcards
 * (`users:*` under `*`) is granted by the other.
 */
function bothGrant (a: Grants, b: Grants): string[] {
  const out = new Set<string>()
  for (const p of a.permissions) if (b.has(p)) out.add(p)
  for (const p of b.permissions) if (a.has(p)) out.add(p)
  return [...out]
}

/** permissions starting with this are granted only by name */
export const RESERVED_NAMESPACE = 'keygate:'

export const NO_GRANTS = new Grants([])
