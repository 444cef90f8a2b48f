/** The sign-in page's sentence for a URL fragment (`#sso_error=...`), or null when it holds none. */
export function ssoErrorMessage (hash: string): string | null
