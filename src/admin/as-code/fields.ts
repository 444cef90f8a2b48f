/**
 * What a registry file holds of each record kind, field by field: the one table that
 * the parser, the plan, the apply and the export all read. A field here is a field of
 * the Redis hash of the same name; adding one to the file format is adding one line.
 * Keys, secrets and hashes are no record of these kinds and never in the file.
 */
import { ORG_NAME_MAX } from '../store/orgs.js'
import { nameProblem, rateLimitProblem } from '../policy/rules.js'

export type Kind = 'role' | 'org' | 'user'

export interface FieldSpec {
  /** the field's name in the file and in the record */
  readonly name: string
  /** a YAML list of strings, stored space-separated (a role's permissions) */
  readonly list?: true
  readonly required?: true
  /** why a value (a list item, for a list) is refused; undefined: it is fine */
  readonly problem?: (value: string) => string | undefined
  /** managed only when the file names it; absent, the record keeps its value */
  readonly keptWhenAbsent?: true
  /** what a new record gets when the file does not name it */
  readonly initial?: string
}

const longerThan = (what: string, max: number) => (v: string): string | undefined => v.length > max ? `${what} is longer than ${max} characters` : undefined
const oneOf = (...values: string[]) => (v: string): string | undefined => values.includes(v) ? undefined : `expected ${values.join(' or ')}`

export const KINDS: Record<Kind, { section: 'roles' | 'orgs' | 'users', fields: readonly FieldSpec[] }> = {
  role: {
    section: 'roles',
    fields: [
      // (the permissions' grammar is write-checks.ts's roleShapeProblems, applied by the parser)
      { name: 'permissions', list: true, required: true },
      { name: 'description', problem: longerThan('the description', 1000) },
      { name: 'rate_limit', problem: rateLimitProblem }
    ]
  },
  org: {
    section: 'orgs',
    fields: [
      { name: 'name', problem: longerThan('the org name', ORG_NAME_MAX) },
      { name: 'rate_limit', problem: rateLimitProblem }
    ]
  },
  user: {
    section: 'users',
    fields: [
      { name: 'org', required: true, problem: (v) => nameProblem('org', v) },
      { name: 'role', required: true, problem: (v) => nameProblem('role', v) },
      { name: 'name', problem: longerThan('the name', 200) },
      { name: 'email', problem: longerThan('the email', 320) },
      // deactivation is often an incident's answer: a file that does not say keeps it
      { name: 'status', keptWhenAbsent: true, initial: 'active', problem: oneOf('active', 'deactivated') }
    ]
  }
}

export const KIND_ORDER: readonly Kind[] = ['role', 'org', 'user']

/** A record's fields as the file sees them: only those of the table, empty ones dropped, lists normalised. */
export function fileFields (kind: Kind, record: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const f of KINDS[kind].fields) {
    const v = record[f.name]
    // (a list may be empty: a role with no permission)
    if (v === undefined || (v === '' && f.list !== true)) continue
    out[f.name] = f.list === true ? v.split(/\s+/).filter((p) => p !== '').join(' ') : v
  }
  return out
}
