/** What the admin API learns about one request, for its handlers and its log line. */
import type { Reason } from '../../errors.js'
import type { Principal } from './principal.js'

export interface AdminRequestState {
  /** set once sign-in succeeded */
  principal: Principal | undefined
  /** the key id of a key credential (public), whether or not it signed in */
  keyId: string | undefined
  /** why sign-in or access was refused (the data plane's vocabulary) */
  reason: Reason | undefined
  /** why a request was refused, for the log line only (never a credential or a value sent) */
  detail: string | undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    adminApi: AdminRequestState
  }
  interface FastifyContextConfig {
    /** this route's body is keys by design (POST /keys/leaked): validation.ts lets them through there */
    takesKeys?: boolean
  }
}
