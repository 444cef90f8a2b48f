/** User writes: put (create or update) and status (deactivate, activate), each one change (policy/users.ts decides). */
import { isoTimestamp } from '../../registry/records.js'
import { decidePutUser, decideUserStatus, type UserInput, type UserStatusChange } from '../policy/users.js'
import { orgFilter } from '../policy/scope-rules.js'
import { listKeys, setKeyFields } from '../store/keys.js'
import {
  putUser as writeUser, setUserStatus as writeStatus, unindexedEmailHolder, userSessions
} from '../store/users.js'
import { write, type ActionContext, type Warned } from './context.js'

export type { UserInput, UserStatusChange } from '../policy/users.js'

/** `createOnly`: a new user only (an existing id: conflict), audited as `user.create` (SSO's new users). */
export async function putUser (
  a: ActionContext,
  id: string,
  input: UserInput,
  o: { createOnly?: boolean } = {}
): Promise<Warned<{ created: boolean, org: string }>> {
  const action = o.createOnly === true ? 'user.create' : 'user.put'
  return await write(a, action, `user:${id}`, async (w) => {
    const email = input.email?.toLowerCase()
    const snap = await w.read({ users: [id], roles: [input.role], orgs: [input.org], emails: [email] })
    // an email the index does not know yet may still be another user's record's
    if (email !== undefined && email !== snap.users.get(id)?.email?.toLowerCase() && !snap.emails.has(email)) {
      const holder = await unindexedEmailHolder(a.store, email, id)
      if (holder !== undefined) (snap.emails as Map<string, string>).set(email, holder)
    }
    // the role it acts with now, the user holding the email (whose record decides), and the org it keeps
    const kept = input.org === undefined ? snap.users.get(id)?.org : undefined
    await w.read({ roles: [snap.users.get(id)?.role], users: [snap.emails.get(email ?? '')], orgs: [kept] }, snap)
    const put = decidePutUser(a.scope, snap, id, input, o)
    const org = put.fields.org as string
    const tx = w.multi()
    writeUser(a.store, tx, id, put.fields, put.fromOrg, put.fromEmail)
    tx.xadd(...a.store.audit.changeArgs(action, `user:${id}`, 'ok', put.fields, org))
    await w.commit(tx)
    return { result: { created: put.created, org }, warnings: put.warnings }
  })
}

/**
 * Deactivate or activate; `revokeCreatedKeys`: also revoke the BOT keys the user created
 * (those the caller may see), in the same change. Deactivating ends the user's SSO sessions.
 */
export async function setUserStatus (
  a: ActionContext,
  id: string,
  status: 'active' | 'deactivated',
  o: { revokeCreatedKeys?: boolean | undefined } = {},
  now = Date.now()
): Promise<UserStatusChange> {
  const action = status === 'active' ? 'user.activate' : 'user.deactivate'
  return await write(a, action, `user:${id}`, async (w) => {
    const snap = await w.read({ users: [id] })
    await w.read({ roles: [snap.users.get(id)?.role] }, snap)
    const listed = await listKeys(a.store, { user: id, org: orgFilter(a.scope, undefined) ?? undefined }, now)
    const change = decideUserStatus(a.scope, snap, id, status, o, listed)
    const sessions = status === 'deactivated' ? await userSessions(a.store, id) : []
    const tx = w.multi()
    writeStatus(a.store, tx, id, status, sessions)
    for (const keyId of change.revokedKeys) {
      setKeyFields(
        a.store,
        tx,
        keyId,
        { status: 'revoked', revoked_at: isoTimestamp(now) }
      )
    }
    tx.xadd(...a.store.audit.changeArgs(action, `user:${id}`, 'ok', change.detail, change.org))
    await w.commit(tx)
    return { changed: change.changed, createdKeys: change.createdKeys, revokedKeys: change.revokedKeys }
  })
}
