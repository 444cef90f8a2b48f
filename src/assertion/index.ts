/**
 * The signed identity assertion (docs/assertion.md): the key files
 * (src/config/assertion-key-files.ts, read with the configuration), the claims (claims.ts), the signer and the JWK Set
 * (assertions.ts),
 * and the route that serves the JWK Set (jwks-route.ts).
 */
import type { AssertionConfig } from '../config/schema.js'
import { createAssertions, type Assertions } from './assertions.js'
import { assertionKeys } from '../config/assertion-key-files.js'

export { createAssertions, type Assertions } from './assertions.js'
export { assertionHeaderName } from './claims.js'
export {
  AssertionKeyError, assertionKeys, readAssertionKeys, type AssertionAlg, type AssertionKeys
} from '../config/assertion-key-files.js'
export { JWKS_PATH, registerJwksRoute, sendJwks } from './jwks-route.js'

/**
 * The assertions of a configuration, its key files read: undefined when off; an AssertionKeyError when a file is unfit.
 */
export async function loadAssertions (a: AssertionConfig): Promise<Assertions | undefined> {
  return await createAssertions(a, assertionKeys(a))
}
