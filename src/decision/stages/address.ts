/**
 * address: a key bound to addresses (`allowed_cidrs`) is used only from them: 403
 * `address_not_allowed` otherwise, with no client address known too. Before the rule,
 * so a key used from elsewhere learns nothing of it, and nothing is counted.
 */
import { challenges } from '../challenges.js'
import type { Identity } from '../identity.js'
import type { AddressList } from '../../registry/records.js'
import type { DecisionStage } from './stage.js'
import { refusal } from '../verdict.js'

/**
 * `client`: the client address as `trusted_proxies` (or, in authorizer mode, the
 * trusted peers) allow it; none known is refused.
 */
export function fromAllowedAddress (identity: Identity, client: string | undefined): boolean {
  return fromAddresses(identity.addresses, client)
}

/** `addresses`: a key's allowed addresses, live or shadow (shadow-restriction.ts); undefined: any */
export function fromAddresses (addresses: AddressList | undefined, client: string | undefined): boolean {
  return addresses === undefined || addresses.allows(client)
}

export const address: DecisionStage = {
  name: 'address',
  answer: '403',
  files: ['src/decision/stages/address.ts'],
  build: () => (p, _method, _path, client) => fromAllowedAddress(p.identity, client)
    ? undefined
    : refusal(p, 'forbidden', 'address_not_allowed', challenges.insufficientScope(undefined))
}
