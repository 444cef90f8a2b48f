/**
 * The Node versions keygate supports, as package.json's `engines` says (at least
 * 22.19), and the warning a command prints on stderr when it runs on an older one:
 * npm's own EBADENGINE notice is easy to miss and says nothing at start-up.
 */
const MINIMUM: readonly [number, number] = [22, 19]

/** The warning for `version` (e.g. `v20.20.2`), or undefined when it is supported. */
export function unsupportedNodeWarning (version: string): string | undefined {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number)
  const [minMajor, minMinor] = MINIMUM
  if (major > minMajor || (major === minMajor && minor >= minMinor)) return undefined
  return `warning: keygate supports Node ${minMajor}.${minMinor} or later (24 LTS recommended); ` +
    `this is Node ${version}, on which it is not tested and may misbehave\n`
}
