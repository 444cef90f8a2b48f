/**
 * Shadow restrictions (docs/safe-change.md): a scope or address list recorded on a key
 * with `keygate keys restrict <keyId> --shadow`, tried on every request of that key
 * beside its live restriction and never enforced. What it would refuse of what the key
 * may do now is reported (the decision's `onShadowRestriction`: counted per key off the
 * request path, src/usage/shadow-refusals.ts, and in `keygate_shadow_decisions_total`
 * with `rule="key_restriction"`). It is decided by the stages' own checks, the address
 * stage's and the authorize stage's, in their order. A key without one pays one
 * property check.
 */
import { scopedGrants, NO_GRANTS } from '../registry/records.js'
import type { Identity } from './identity.js'
import type { CompiledRule } from './match-rule.js'
import { fromAddresses } from './stages/address.js'
import { permitted } from './stages/authorize.js'

/** The label the shadow metric counts a key's shadow restriction under (in place of a shadow rule's index) */
export const KEY_RESTRICTION = 'key_restriction'

export type ShadowRefusal = 'address_not_allowed' | 'missing_permission'

/**
 * What the key's shadow restriction would refuse of a request its live one allowed with
 * `rule`, or undefined: nothing (or no shadow restriction). `client`: as the address stage
 * sees it.
 */
export function shadowRestrictionRefusal (
  identity: Identity, rule: CompiledRule, client: string | undefined
): ShadowRefusal | undefined {
  const shadow = identity.shadowRestriction
  if (shadow === undefined) return undefined
  if (!fromAddresses(shadow.addresses, client)) return 'address_not_allowed'
  const grants = scopedGrants(identity.roleGrants ?? NO_GRANTS, shadow.scope)
  return permitted(grants, rule) ? undefined : 'missing_permission'
}
