/** Role writes (admin only): put and delete, each one change (policy/roles.ts decides). */
import type { RoleView } from '../model/views.js'
import { decideDeleteRole, decidePutRole } from '../policy/roles.js'
import { listKeys } from '../store/keys.js'
import { deleteRole as removeRole, putRole as writeRole, showRole } from '../store/roles.js'
import { listUsers } from '../store/users.js'
import { write, type ActionContext } from './context.js'

/** A description or rate limit not given is kept; `rateLimit: null` removes the limit. Returns the role as written. */
export async function putRole (
  a: ActionContext,
  name: string,
  permissions: string[],
  description?: string,
  rateLimit?: string | null
): Promise<RoleView> {
  await write(a, 'role.put', `role:${name}`, async (w) => {
    const { fields, detail } = decidePutRole(a.scope, name, permissions, description, rateLimit)
    const tx = w.multi()
    writeRole(a.store, tx, name, fields, rateLimit === null)
    tx.xadd(...a.store.audit.changeArgs('role.put', `role:${name}`, 'ok', detail))
    await w.commit(tx)
  })
  return await showRole(a.store, name)
}

/** Refused while users or BOT keys use the role, naming them, unless `force`; returns who used it. */
export async function deleteRole (
  a: ActionContext,
  name: string,
  force: boolean,
  now = Date.now()
): Promise<{ users: string[], keys: string[] }> {
  return await write(a, 'role.delete', `role:${name}`, async (w) => {
    const snap = await w.read({ roles: [name] })
    const using = decideDeleteRole(
      a.scope,
      snap,
      name,
      force,
      await listUsers(a.store),
      await listKeys(a.store, {}, now)
    )
    const tx = w.multi()
    removeRole(a.store, tx, name)
    tx.xadd(...a.store.audit.changeArgs(
      'role.delete',
      `role:${name}`,
      'ok',
      { force: String(force), users: using.users.join(' '), keys: using.keys.join(' ') }
    ))
    await w.commit(tx)
    return using
  })
}
