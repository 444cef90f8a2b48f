/**
 * Roles (admin only): put (create or replace) and delete, refused while users or BOT keys use the role unless forced.
 */
import { AdminError } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import type { KeyView, UserView } from '../model/views.js'
import { checkName, checkPermissions, checkRateLimit } from './names.js'
import { requireAdmin } from './scope-rules.js'

/**
 * A role put: its name, its permissions in the one grammar, its rate limit. A
 * description or rate limit not given is kept; `rateLimit: null` removes the limit.
 * Returns the fields to write and the audit entry's detail.
 */
export function decidePutRole (
  s: AdminScope,
  name: string,
  permissions: readonly string[],
  description?: string,
  rateLimit?: string | null
): { fields: Record<string, string>, detail: Record<string, string> } {
  requireAdmin(s, 'putting a role')
  checkPermissions(permissions)
  checkName('role', name)
  if (typeof rateLimit === 'string') checkRateLimit(rateLimit)
  const fields: Record<string, string> = { permissions: permissions.join(' ') }
  if (description !== undefined) fields.description = description
  if (typeof rateLimit === 'string') fields.rate_limit = rateLimit
  return { fields, detail: rateLimit === null ? { ...fields, rate_limit: '' } : fields }
}

/**
 * A role deleted: refused while users (`users`: every user) or active BOT keys (`keys`:
 * every key) act with it, naming them, unless `force`. Returns who used it.
 */
export function decideDeleteRole (
  s: AdminScope,
  snap: Snapshot,
  name: string,
  force: boolean,
  users: readonly UserView[],
  keys: readonly KeyView[]
): { users: string[], keys: string[] } {
  requireAdmin(s, 'deleting a role')
  if (!snap.roles.has(name)) throw new AdminError(`role "${name}" does not exist`, 'not_found')
  const using = {
    users: users.filter((u) => u.role === name).map((u) => u.id),
    keys: keys.filter((k) => k.type === 'bot' && k.role === name && k.status === 'active').map((k) => k.id)
  }
  if ((using.users.length > 0 || using.keys.length > 0) && !force) {
    const refs = [
      using.users.length > 0 ? `users ${using.users.join(', ')}` : '',
      using.keys.length > 0 ? `BOT keys ${using.keys.join(', ')}` : ''
    ]
    const what = refs.filter((r) => r !== '').join(' and ')
    throw new AdminError(
      `role "${name}" is still used by ${what}; ` +
        'reassign them, or force the deletion (they will then have no permissions)',
      'conflict'
    )
  }
  return using
}
