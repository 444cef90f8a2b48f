/** Printing for humans (aligned tables) and for scripts (`--json`). */
export function printJson (value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

export function printTable (rows: Array<Record<string, string | undefined>>, columns: string[]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n')
    return
  }
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '-').length)))
  const line = (cells: string[]): string => cells.map((cell, i) => cell.padEnd(widths[i] as number)).join('  ').trimEnd() + '\n'
  process.stdout.write(line(columns.map((c) => c.toUpperCase())))
  for (const r of rows) process.stdout.write(line(columns.map((c) => r[c] ?? '-')))
}
