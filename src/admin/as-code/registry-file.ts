/**
 * A registry file (YAML), read into the records it asks for, with every problem found
 * at once, each with its place in the file (line:column) and its path:
 *
 *   org: acme                 optional: the file covers this org only (`registry export --org`)
 *   roles:
 *     reader:
 *       permissions: [users:read]
 *       description: reads users
 *       rate_limit: 50/1s
 *   orgs:
 *     acme: { name: Acme Corp, rate_limit: 1000/1s }
 *   users:
 *     alice: { org: acme, role: reader, name: Alice, email: alice@example.com }
 *
 * The fields of each kind are fields.ts's. What a record may refer to (a user's role)
 * depends on the registry too, and is the plan's to check (plan.ts).
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair } from 'yaml'
import { roleShapeProblems, userShapeProblems } from '../policy/write-checks.js'
import { nameProblem } from '../policy/rules.js'
import { KINDS, KIND_ORDER, type Kind } from './fields.js'

/** the largest registry file read */
export const MAX_FILE_BYTES = 16 * 1024 * 1024

export interface Place {
  line: number
  col: number
}

export interface FileProblem {
  /** undefined: the problem is not at one place in the file (what --prune would delete) */
  place: Place | undefined
  /** where in the document: `users.alice.role` */
  path: string
  message: string
}

export interface DesiredRecord {
  fields: Record<string, string>
  place: Place
  /** each field's value's place */
  fieldPlaces: Record<string, Place>
}

export interface RegistryFile {
  /** the file covers this org only */
  org: string | undefined
  records: Record<Kind, Map<string, DesiredRecord>>
  problems: FileProblem[]
}

export function parseRegistryFile (text: string): RegistryFile {
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  const records: RegistryFile['records'] = { role: new Map(), org: new Map(), user: new Map() }
  const problems: FileProblem[] = []
  const placeOf = (node: Node | null | undefined): Place => {
    const offset = node?.range?.[0] ?? 0
    const { line, col } = lines.linePos(offset)
    return { line, col }
  }
  const problem = (node: Node | null | undefined, path: string, message: string): void => { problems.push({ place: placeOf(node), path, message }) }

  for (const err of [...doc.errors, ...doc.warnings]) {
    problems.push({ place: lines.linePos(err.pos[0]), path: '', message: err.message.split('\n')[0] ?? err.message })
  }
  if (doc.errors.length > 0) return { org: undefined, records, problems }

  const root = doc.contents
  if (root === null || (isScalar(root) && root.value === null)) return { org: undefined, records, problems }
  if (!isMap(root)) {
    problem(root, '', 'expected a mapping with roles, orgs and users')
    return { org: undefined, records, problems }
  }

  let org: string | undefined
  const sections = new Map<string, Pair<unknown, unknown>>()
  for (const pair of root.items) {
    const key = keyOf(pair)
    if (key === 'org') {
      if (isScalar(pair.value) && typeof pair.value.value === 'string') {
        org = pair.value.value
        const bad = nameProblem('org', org)
        if (bad !== undefined) problem(pair.value, 'org', bad)
      } else {
        problem(pair.value as Node, 'org', 'expected an org name')
      }
    } else if (key === 'roles' || key === 'orgs' || key === 'users') {
      sections.set(key, pair)
    } else {
      problem(pair.key as Node, String(key), 'unknown section (expected org, roles, orgs, users)')
    }
  }

  for (const kind of KIND_ORDER) {
    const { section, fields } = KINDS[kind]
    const pair = sections.get(section)
    if (pair === undefined) continue
    const body = pair.value as Node | null
    if (body === null || (isScalar(body) && body.value === null)) continue
    if (!isMap(body)) {
      problem(body, section, `expected a mapping of ${section} by name`)
      continue
    }
    for (const item of body.items) {
      const name = keyOf(item)
      const path = `${section}.${String(name)}`
      const keyNode = item.key as Node
      if (typeof name !== 'string') {
        problem(keyNode, section, 'expected a name')
        continue
      }
      const value = item.value as Node | null
      if (!isMap(value)) {
        problem(value ?? keyNode, path, 'expected a mapping of fields')
        continue
      }
      const record: DesiredRecord = { fields: {}, place: placeOf(keyNode), fieldPlaces: {} }
      for (const field of value.items) {
        const fname = keyOf(field)
        const spec = fields.find((f) => f.name === fname)
        const fnode = field.value as Node | null
        if (spec === undefined) {
          problem(field.key as Node, `${path}.${String(fname)}`, `unknown field (expected ${fields.map((f) => f.name).join(', ')})`)
          continue
        }
        const fpath = `${path}.${spec.name}`
        record.fieldPlaces[spec.name] = placeOf(fnode ?? (field.key as Node))
        if (spec.list === true) {
          if (!isSeq(fnode) || fnode.items.some((i) => !isScalar(i) || typeof i.value !== 'string')) {
            problem(fnode ?? (field.key as Node), fpath, 'expected a list of strings')
            continue
          }
          const items = fnode.items.map((i) => (i as { value: string }).value)
          for (const [n, v] of items.entries()) {
            // a role's permissions: the admin writes' own grammar check (write-checks.ts), item by item
            const bad = spec.problem?.(v) ?? (kind === 'role' ? roleShapeProblems(name, [v]).find((d) => d.field === 'permissions')?.reason : undefined)
            if (bad !== undefined) problem(fnode.items[n] as Node, `${fpath}[${n}]`, bad)
          }
          record.fields[spec.name] = items.join(' ')
        } else {
          if (!isScalar(fnode) || typeof fnode.value !== 'string') {
            problem(fnode ?? (field.key as Node), fpath, 'expected a string (quote it)')
            continue
          }
          const bad = spec.problem?.(fnode.value)
          if (bad !== undefined) problem(fnode, fpath, bad)
          if (fnode.value !== '') record.fields[spec.name] = fnode.value
        }
      }
      for (const spec of fields) {
        if (spec.required === true && record.fields[spec.name] === undefined && record.fieldPlaces[spec.name] === undefined) problem(keyNode, path, `${spec.name} is required`)
      }
      // the admin writes' own checks (write-checks.ts), with the place of the value they concern
      const shape = kind === 'role'
        ? roleShapeProblems(name, [])
        : kind === 'user' ? userShapeProblems(name, record.fields.org ?? 'unset') : nameProblem('org', name) === undefined ? [] : [{ field: 'name', reason: nameProblem('org', name) as string }]
      for (const d of shape) {
        const at = d.field === 'id' || d.field === 'name' ? keyNode : d.field === undefined ? keyNode : undefined
        const place = at !== undefined ? placeOf(at) : record.fieldPlaces[d.field ?? ''] ?? record.place
        // (the org's and the role's own shape were checked with their field above)
        if (kind === 'user' && d.field === 'org') continue
        problems.push({ place, path: d.field === 'id' || d.field === 'name' ? path : `${path}.${d.field ?? ''}`, message: d.reason })
      }
      if (kind === 'org' && Object.keys(record.fields).length === 0 && problems.every((p) => !p.path.startsWith(path))) {
        problem(keyNode, path, 'an org record needs a name or a rate_limit')
      }
      if (org !== undefined && kind === 'user' && record.fields.org !== undefined && record.fields.org !== org) {
        problems.push({ place: record.fieldPlaces.org ?? record.place, path: `${path}.org`, message: `the file covers org "${org}" only` })
      }
      if (org !== undefined && kind === 'org' && name !== org) problem(keyNode, path, `the file covers org "${org}" only`)
      records[kind].set(name, record)
    }
  }
  problems.sort((a, b) => (a.place?.line ?? 0) - (b.place?.line ?? 0) || (a.place?.col ?? 0) - (b.place?.col ?? 0))
  return { org, records, problems }
}

function keyOf (pair: Pair<unknown, unknown>): unknown {
  const k = pair.key
  return isScalar(k) ? k.value : k
}
