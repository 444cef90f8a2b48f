/** Durations as written on the command line and in the file: `<n>s`, `<n>m`, `<n>h`, `<n>d`. */
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
/** (also the admin API's schemas) */
export const DURATION = /^([0-9]{1,9})([smhd])$/

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration (text: string): number | undefined {
  const m = DURATION.exec(text.trim())
  if (m === null) return undefined
  return Number(m[1]) * (UNITS[m[2] as string] as number)
}
