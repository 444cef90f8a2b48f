/**
 * The checks of a registry file's values (the parser, src/admin/as-code/registry-file.ts,
 * checks its form): each field's value, each record's name, the fields a kind requires,
 * and that a file covering one org (`org:`) names no other. Every problem at once, with
 * the place of the value it concerns; the file's own problems, form and values, in the
 * order of the file. What a record may refer to is the plan's (registry-plan.ts).
 */
import { grantProblems } from '../../config/permission.js'
import { ORG_NAME_MAX } from '../model/limits.js'
import {
  KINDS,
  KIND_ORDER,
  type DesiredRecord,
  type FileProblem,
  type Kind,
  type RegistryFile
} from '../model/registry-fields.js'
import { nameProblem, quotaProblem, rateLimitProblem, roleShapeProblems, userShapeProblems } from './names.js'
import { CREDITS, CREDITS_HELP } from '../../config/quota.js'
import { keyMaxTtlProblem } from './orgs.js'
import { EXTERNAL_ID, IDENTITY_ID, metaProblem, metaText } from '../../registry/records.js'

type Check = (value: string) => string | undefined

const longerThan = (
  what: string,
  max: number
): Check => (v) => v.length > max ? `${what} is longer than ${max} characters` : undefined
const oneOf = (...values: string[]): Check => (v) => values.includes(v) ? undefined : `expected ${values.join(' or ')}`

/** Each field's check, by kind (a list's: of each item). */
const FIELD_CHECKS: Record<Kind, Record<string, Check>> = {
  role: {
    // the one grammar of permissions (src/config/permission.ts), item by item
    permissions: (v) => grantProblems([v])[0],
    description: longerThan('the description', 1000),
    rate_limit: rateLimitProblem
  },
  org: {
    name: longerThan('the org name', ORG_NAME_MAX),
    rate_limit: rateLimitProblem,
    key_max_ttl: keyMaxTtlProblem,
    quota: quotaProblem,
    credits: (v) => CREDITS.test(v) ? undefined : `invalid credits "${v}": ${CREDITS_HELP}`
  },
  user: {
    org: (v) => nameProblem('org', v),
    role: (v) => nameProblem('role', v),
    name: longerThan('the name', 200),
    email: longerThan('the email', 320),
    status: oneOf('active', 'deactivated')
  },
  identity: {
    org: (v) => nameProblem('org', v),
    external_id: (v) => EXTERNAL_ID.test(v)
      ? undefined
      : 'an external id is 1 to 256 printable characters, without spaces',
    // (the value never quoted: meta is the team's own data)
    meta: (v) => metaProblem(parsedMeta(v)),
    rate_limit: rateLimitProblem,
    quota: quotaProblem,
    credits: (v) => CREDITS.test(v) ? undefined : `invalid credits "${v}": ${CREDITS_HELP}`
  }
}

function parsedMeta (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * A value as the registry stores it: an identity's `meta` as its compact JSON (what `identities put` writes), so a
 * file and the record it exported compare equal whatever the file's spacing. Any other value as written.
 */
export function storedValue (kind: Kind, field: string, value: string): string {
  if (kind !== 'identity' || field !== 'meta') return value
  const meta = parsedMeta(value)
  return metaProblem(meta) === undefined ? metaText(meta as Record<string, unknown>) : value
}

/** The file's own problems, of form and of its values, in the order of the file. */
export function registryFileProblems (file: RegistryFile): FileProblem[] {
  const checks: FileProblem[] = []
  if (file.org !== undefined) {
    const bad = nameProblem('org', file.org)
    if (bad !== undefined) checks.push({ place: file.orgPlace, path: 'org', message: bad })
  }
  for (const kind of KIND_ORDER) {
    for (const [name, record] of file.records[kind]) checks.push(...recordProblems(file, kind, name, record, checks))
  }
  const at = (p: FileProblem): [number, number] => [p.place?.line ?? 0, p.place?.col ?? 0]
  return [...file.problems, ...checks].sort((a, b) => at(a)[0] - at(b)[0] || at(a)[1] - at(b)[1])
}

/** One record's problems (`before`: the checks' problems of the records before it). */
function recordProblems (
  file: RegistryFile,
  kind: Kind,
  name: string,
  record: DesiredRecord,
  before: readonly FileProblem[]
): FileProblem[] {
  const path = `${KINDS[kind].section}.${name}`
  const out: FileProblem[] = []
  for (const [field, values] of Object.entries(record.values)) {
    const list = KINDS[kind].fields.find((f) => f.name === field)?.list === true
    values.forEach(({ value, place }, n) => {
      const bad = FIELD_CHECKS[kind][field]?.(value)
      if (bad !== undefined) {
        out.push({
          place,
          path: list ? `${path}.${field}[${n}]` : `${path}.${field}`,
          message: bad
        })
      }
    })
  }
  for (const spec of KINDS[kind].fields) {
    const named = record.fields[spec.name] !== undefined || record.fieldPlaces[spec.name] !== undefined
    if (spec.required === true && !named) {
      out.push({ place: record.place, path, message: `${spec.name} is required` })
    }
  }
  // the name's own shape, and a user's id (the org's shape was checked with its field)
  const shape = kind === 'role'
    ? roleShapeProblems(name, [])
    : kind === 'user'
      ? userShapeProblems(
        name,
        record.fields.org ?? 'unset'
      ).filter((d) => d.field !== 'org')
      : kind === 'identity' ? identityNameProblems(name) : orgNameProblems(name)
  for (const d of shape) {
    const onName = d.field === 'id' || d.field === 'name'
    const place = onName || d.field === undefined ? record.place : record.fieldPlaces[d.field] ?? record.place
    out.push({ place, path: onName ? path : `${path}.${d.field ?? ''}`, message: d.reason })
  }
  const found = [...file.problems.slice(0, record.problemsBefore), ...before, ...out]
  if (kind === 'org' && Object.keys(record.fields).length === 0 && found.every((p) => !p.path.startsWith(path))) {
    out.push({ place: record.place, path, message: 'an org record needs a name, a rate_limit or a key_max_ttl' })
  }
  const inOrg = kind === 'user' || kind === 'identity'
  if (file.org !== undefined && inOrg && record.fields.org !== undefined && record.fields.org !== file.org) {
    out.push({
      place: record.fieldPlaces.org ?? record.place,
      path: `${path}.org`,
      message: `the file covers org "${file.org}" only`
    })
  }
  if (file.org !== undefined && kind === 'org' && name !== file.org) {
    out.push({
      place: record.place,
      path,
      message: `the file covers org "${file.org}" only`
    })
  }
  return out
}

function orgNameProblems (name: string): Array<{ field: string, reason: string }> {
  const bad = nameProblem('org', name)
  return bad === undefined ? [] : [{ field: 'name', reason: bad }]
}

function identityNameProblems (name: string): Array<{ field: string, reason: string }> {
  return IDENTITY_ID.test(name)
    ? []
    : [{ field: 'id', reason: `invalid identity id "${name}" (letters, digits and _.@:- ; up to 128 characters)` }]
}
