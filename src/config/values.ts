/** Plain-value helpers of the configuration loader (load.ts). */

/** The values of a union of literals (an enumeration), else undefined. */
export function literals (schema: object): unknown[] | undefined {
  const anyOf: unknown = (schema as { anyOf?: unknown }).anyOf
  if (!Array.isArray(anyOf)) return undefined
  const values = (anyOf as Array<{ const?: unknown }>).map((s) => s.const)
  return values.every((v) => v !== undefined) ? values : undefined
}

/** Whether a value contains itself (a recursive YAML alias: `a: &x { b: *x }`), which no field can hold. */
export function isRecursive (value: object, within: Set<object> = new Set()): boolean {
  if (within.has(value)) return true
  within.add(value)
  for (const v of Object.values(value)) {
    if (typeof v === 'object' && v !== null && isRecursive(v, within)) return true
  }
  within.delete(value)
  return false
}

export function dedupe (problems: string[]): string[] {
  return [...new Set(problems)]
}
