/**
 * The admin wing's bounds and defaults, one place for the policy that applies them and
 * the front ends that describe them (the admin API's schemas, the CLI's help).
 */

/** the longest key name */
export const KEY_NAME_MAX = 200
/** the longest org display name */
export const ORG_NAME_MAX = 200
/** the most permissions in a key's scope, and addresses in its allowed_cidrs */
export const KEY_RESTRICTION_MAX = 256
/** the longest plaintext an import accepts: the gateway looks up no longer token (authenticate-request.ts) */
export const IMPORTED_KEY_MAX = 512
/** the longest `leak_source` kept (a URL); a longer one is cut */
export const LEAK_SOURCE_MAX = 1024
/** how long a rotated key keeps working by default (`keys rotate`, POST /keys/:id/rotate) */
export const DEFAULT_GRACE_MS = 24 * 3_600_000
/** keys per page of a key listing: the default and the most */
export const KEY_PAGE_DEFAULT = 100
export const KEY_PAGE_MAX = 1000
/** an audit page's cursor, both kinds (changes and refusals): `<ms>-<n>` */
export const CURSOR = /^[0-9]{1,15}-[0-9]{1,15}$/
