/**
 * The facade's reads of keys, users, roles, orgs and request counts, each as the
 * principal may see it (filtered in one place, reads.ts). `AdminActions` (index.ts)
 * extends it with every other resource's actions.
 */
import type { KeyRequestRecord, KeyRequestsQuery } from '../../usage/key-requests-read.js'
import type { UsagePoint, UsageRange } from '../../usage/reader.js'
import type { KeyView, OrgView, RoleView, UserView } from '../model/views.js'
import type { ActionContext } from './context.js'
import * as reads from './reads.js'

export class ReadActions {
  constructor (protected readonly a: ActionContext) {}

  scopedKeyFilter (filter: reads.KeyFilter): reads.KeyFilter | null {
    return reads.scopedKeyFilter(this.a, filter)
  }

  async listKeys (filter: reads.KeyFilter = {}): Promise<KeyView[]> {
    return await reads.listKeys(this.a, filter)
  }

  async keyPage (
    filter: reads.KeyFilter,
    page: { limit: number, cursor?: string | undefined }
  ): Promise<reads.KeyPage> {
    return await reads.keyPage(this.a, filter, page)
  }

  async keysOverPolicy (filter: { org: string, user?: string | undefined }): Promise<KeyView[]> {
    return await reads.keysOverPolicy(this.a, filter)
  }

  async showKey (id: string): Promise<KeyView> {
    return await reads.showKey(this.a, id)
  }

  async listUsers (filter: { org?: string | undefined } = {}): Promise<UserView[]> {
    return await reads.listUsers(this.a, filter)
  }

  async showUser (id: string): Promise<UserView> {
    return await reads.showUser(this.a, id)
  }

  async listRoles (): Promise<RoleView[]> {
    return await reads.listRoles(this.a)
  }

  async showRole (name: string): Promise<RoleView> {
    return await reads.showRole(this.a, name)
  }

  async listOrgs (o: { inUse?: boolean | undefined } = {}): Promise<OrgView[]> {
    return await reads.listOrgs(this.a, o)
  }

  async showOrg (org: string): Promise<OrgView> {
    return await reads.showOrg(this.a, org)
  }

  async ownKeyCap (): Promise<number | undefined> {
    return await reads.ownKeyCap(this.a)
  }

  /** a key's counts, with its environment */
  async keyUsage (id: string, range: UsageRange): Promise<{ env: 'live' | 'test', points: UsagePoint[] }> {
    return await reads.keyUsage(this.a, id, range)
  }

  async keyRequests (id: string, q: KeyRequestsQuery): Promise<KeyRequestRecord[]> {
    return await reads.keyRequests(this.a, id, q)
  }

  async orgUsage (org: string, range: UsageRange): Promise<UsagePoint[]> {
    return await reads.orgUsage(this.a, org, range)
  }

  async keysUsage (ids: readonly string[], range: UsageRange): Promise<Array<{ id: string, points: UsagePoint[] }>> {
    return await reads.keysUsage(this.a, ids, range)
  }
}
