/**
 * A registry file (YAML), read into the records it asks for, with every problem of its
 * form found at once, each with its place in the file (line:column) and its path:
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
 *   identities:
 *     cust-42: { org: acme, external_id: "42", meta: '{"plan":"pro"}', quota: 1000/1d }
 *
 * The fields of each kind are model/registry-fields.ts's. What each value must be, and
 * what a record may refer to (a user's role), are the policy's to check
 * (policy/registry-file.ts, policy/registry-plan.ts), when the file is planned or applied.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair } from 'yaml'
import {
  KINDS,
  KIND_ORDER,
  byKind,
  type DesiredRecord,
  type FileProblem,
  type Place,
  type RegistryFile
} from '../model/registry-fields.js'

/** the largest registry file read */
export const MAX_FILE_BYTES = 16 * 1024 * 1024

export function parseRegistryFile (text: string): RegistryFile {
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  const records: RegistryFile['records'] = byKind<DesiredRecord>()
  const problems: FileProblem[] = []
  const placeOf = (node: Node | null | undefined): Place => {
    const { line, col } = lines.linePos(node?.range?.[0] ?? 0)
    return { line, col }
  }
  const problem = (
    node: Node | null | undefined,
    path: string,
    message: string
  ): void => { problems.push({ place: placeOf(node), path, message }) }

  for (const err of [...doc.errors, ...doc.warnings]) {
    problems.push({ place: lines.linePos(err.pos[0]), path: '', message: err.message.split('\n')[0] ?? err.message })
  }
  if (doc.errors.length > 0) return { org: undefined, records, problems }

  const root = doc.contents
  if (root === null || (isScalar(root) && root.value === null)) return { org: undefined, records, problems }
  if (!isMap(root)) {
    problem(root, '', 'expected a mapping with roles, orgs, users and identities')
    return { org: undefined, records, problems }
  }

  let org: string | undefined
  let orgPlace: Place | undefined
  const sections = new Map<string, Pair<unknown, unknown>>()
  for (const pair of root.items) {
    const key = keyOf(pair)
    if (key === 'org') {
      if (isScalar(pair.value) && typeof pair.value.value === 'string') {
        org = pair.value.value
        orgPlace = placeOf(pair.value)
      } else {
        problem(pair.value as Node, 'org', 'expected an org name')
      }
    } else if (key === 'roles' || key === 'orgs' || key === 'users' || key === 'identities') {
      sections.set(key, pair)
    } else {
      problem(pair.key as Node, String(key), 'unknown section (expected org, roles, orgs, users, identities)')
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
      const record: DesiredRecord = {
        fields: {},
        place: placeOf(keyNode),
        fieldPlaces: {},
        values: {},
        problemsBefore: 0
      }
      for (const field of value.items) {
        const fname = keyOf(field)
        const spec = fields.find((f) => f.name === fname)
        const fnode = field.value as Node | null
        if (spec === undefined) {
          problem(
            field.key as Node,
            `${path}.${String(fname)}`,
            `unknown field (expected ${fields.map((f) => f.name).join(', ')})`
          )
          continue
        }
        const fpath = `${path}.${spec.name}`
        record.fieldPlaces[spec.name] = placeOf(fnode ?? (field.key as Node))
        if (spec.list === true) {
          if (!isSeq(fnode) || fnode.items.some((i) => !isScalar(i) || typeof i.value !== 'string')) {
            problem(fnode ?? (field.key as Node), fpath, 'expected a list of strings')
            continue
          }
          const items = fnode.items.map((i) => ({ value: (i as { value: string }).value, place: placeOf(i as Node) }))
          record.values[spec.name] = items
          record.fields[spec.name] = items.map((i) => i.value).join(' ')
        } else {
          if (!isScalar(fnode) || typeof fnode.value !== 'string') {
            problem(fnode ?? (field.key as Node), fpath, 'expected a string (quote it)')
            continue
          }
          record.values[spec.name] = [{ value: fnode.value, place: placeOf(fnode) }]
          if (fnode.value !== '') record.fields[spec.name] = fnode.value
        }
      }
      record.problemsBefore = problems.length
      records[kind].set(name, record)
    }
  }
  return { org, orgPlace, records, problems }
}

function keyOf (pair: Pair<unknown, unknown>): unknown {
  const k = pair.key
  return isScalar(k) ? k.value : k
}
