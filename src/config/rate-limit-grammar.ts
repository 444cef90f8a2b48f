/**
 * The grammar of a rate limit as written everywhere: `<count>/<period>`, count
 * 1..999,999,999, period `<n>s|m|h|d` with n 1..9,999. The configuration's schema
 * checks it; src/ratelimit/limit.ts parses with it.
 */
export const RATE_LIMIT = /^([1-9][0-9]{0,8})\/([1-9][0-9]{0,3})([smhd])$/
/** the same, for the config schema and the admin API's JSON schemas */
export const RATE_LIMIT_PATTERN = RATE_LIMIT.source
