/** The admin scope a signed-in key's grants give, for the admin API's sign-in (the rules: admin/scope-rules.ts). */
export { scopeOfGrants } from './admin/scope-rules.js'
