/** Printing for humans (aligned tables) and for scripts (`--json`); warnings and errors on stderr. */
import type { ErrorDetail } from '../admin/model/errors.js'

export function printJson (value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

export function printTable (rows: ReadonlyArray<object>, columns: string[]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n')
    return
  }
  const cell = (r: object, c: string): string => {
    const v = (r as Record<string, unknown>)[c]
    return v === undefined || v === null || v === '' ? '-' : Array.isArray(v) ? v.join(' ') : String(v)
  }
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r, c).length)))
  const line = (cells: string[]): string => cells.map((
    text,
    i
  ) => text.padEnd(widths[i] as number)).join('  ').trimEnd() + '\n'
  process.stdout.write(line(columns.map((c) => c.toUpperCase())))
  for (const r of rows) process.stdout.write(line(columns.map((c) => cell(r, c))))
}

/** What a write accepted but the operator should know (an org with no record): one `warning:` line each, on stderr. */
export function printWarnings (warnings: readonly ErrorDetail[]): void {
  for (const w of warnings) process.stderr.write(`warning: ${w.reason}${silencer(w.reason)}\n`)
}

/** The command that ends a warning, after it: an org without a record gets one. */
function silencer (reason: string): string {
  const org = /org "([\w.@-]+)" has no record/.exec(reason)?.[1]
  return org === undefined ? '' : ` (\`keygate orgs put ${org} --name <text>\` puts one and silences this)`
}
