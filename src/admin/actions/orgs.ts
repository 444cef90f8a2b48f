/** Org record writes (admin only): put, one change (policy/orgs.ts decides); the record is returned as written. */
import type { OrgView } from '../model/views.js'
import { decidePutOrg, type OrgInput } from '../policy/orgs.js'
import { orgAfterPut, putOrg as writeOrg } from '../store/orgs.js'
import { write, type ActionContext } from './context.js'

export type { OrgInput } from '../policy/orgs.js'

/** A field not given is kept; `rateLimit: null` removes the limit, `keyMaxTtl: null` the key policy. */
export async function putOrg (a: ActionContext, org: string, input: OrgInput, now = Date.now()): Promise<OrgView> {
  return await write(a, 'org.put', `org:${org}`, async (w) => {
    const put = decidePutOrg(a.scope, org, input)
    const tx = w.multi()
    writeOrg(a.store, tx, org, put.fields, put.removed)
    tx.xadd(...a.store.audit.changeArgs('org.put', `org:${org}`, 'ok', put.detail, org))
    await w.commit(tx)
    return await orgAfterPut(a.store, org, now)
  })
}
