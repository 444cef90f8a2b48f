/** The admin API's sign-in: refused credentials, and peers held back for too many of them. */
import type { Registrar } from './registrar.js'

/** Recorded by the admin API's sign-in hook (src/admin/api/index.ts). */
export interface AdminSignInMeter {
  /** a sign-in refused with 401 (a credential that did not sign in) */
  failure: () => void
  /** a request refused with 429: its peer had too many failed sign-ins */
  limited: () => void
}

export function adminSignInMetrics (r: Registrar): AdminSignInMeter {
  let failures = 0
  let limited = 0
  r.total('keygate_admin_sign_in_failures_total',
    'Admin API sign-ins refused with 401 (a credential was sent, and it did not sign in); they count towards ' +
    'admin.sign_in_failures_per_minute.',
    () => failures)
  r.total('keygate_admin_sign_in_limited_total',
    'Admin API requests refused with 429 before any credential was read: their peer address had ' +
    'admin.sign_in_failures_per_minute failed sign-ins within the minute.',
    () => limited)
  return {
    failure () { failures++ },
    limited () { limited++ }
  }
}
