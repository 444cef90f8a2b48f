/**
 * The permission grammar, defined once for every place that reads one: the
 * permissions a rule requires (the configuration, `config check`) and the
 * permissions a role grants (every registry write, from the CLI, the admin API and
 * the console). Permissions match exactly, so the grammar is lower case: a role
 * granting `USERS:READ` would never satisfy a rule requiring `users:read`.
 *
 *   users:read, billing.v2:invoices:read   a permission: resource:action (rules and roles)
 *   users:*                                 every action of a resource (roles only)
 *   *                                       every permission but `keygate:` ones (roles only)
 */
const SEGMENT = '[a-z0-9_.-]+'

/** what a rule may require: `resource:action`, more `:` segments allowed */
export const PERMISSION_PATTERN = `^${SEGMENT}(:${SEGMENT})+$`

/** what a role may grant: a permission, `resource:*`, or `*` */
export const GRANT = new RegExp(`^(\\*|${SEGMENT}(:${SEGMENT})*:\\*|${SEGMENT}(:${SEGMENT})+)$`)

export const GRANT_HELP = 'expected resource:action, resource:* or *, in lower case'

/** Why each granted permission outside the grammar is refused (empty: all are fine). */
export function grantProblems (permissions: readonly string[]): string[] {
  return permissions.filter((p) => !GRANT.test(p)).map((p) => `invalid permission "${p}" (${GRANT_HELP})`)
}
