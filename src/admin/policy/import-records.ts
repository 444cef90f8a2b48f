/**
 * The records of a key import (docs/imports.md), each checked in itself: one JSON object
 * a line of an import file (the CLI), or one element of the admin API's array. Each is a
 * key record like any other, `hash` the SHA-256 (hex) of the whole token as a client
 * sends it: a plaintext `key` is hashed as its record is read and never kept. Every
 * problem is named with its record's place (`line <n>`, `record <i>`).
 */
import { createHash } from 'node:crypto'
import { isoTimestamp, parseTimestamp } from '../../registry/records.js'
import { AdminError, type ErrorDetail, type RefusalNote } from '../model/errors.js'
import { IMPORTED_KEY_MAX } from '../model/limits.js'
import type { CreateKeyInput } from './key-input.js'
import { checkKeyExclusions, checkKeyLabels, checkKeyRequirements } from './key-input.js'

/** One record of an import, checked in itself: the token only as its SHA-256. */
export interface ImportInput extends CreateKeyInput {
  /** 1-based line in the file, or 0-based index of an admin API import's array */
  line: number
  /** where the record is, as problems name it: `line <n>` or `record <i>` */
  place: string
  sha256: string
  /** `key` (hashed here) or `sha256` */
  from: 'key' | 'sha256'
  expiresAt?: string | undefined
  /**
   * a personal key's `org`, as its line states it: checked against its user's org when
   * the user is found (imports.ts); the key takes its org from its user all the same
   */
  statedOrg?: string | undefined
}

/** The refusal of an import with problems: each one listed, nothing written. */
export function importRefused (
  problems: ErrorDetail[],
  kind: 'invalid' | 'forbidden' = 'invalid',
  needs?: string,
  audit?: readonly RefusalNote[]
): AdminError {
  return new AdminError(
    `the import has ${problems.length} problem(s); nothing was imported`,
    kind,
    needs,
    problems,
    audit
  )
}

/**
 * A problem of one record: its place (`line <n>`, `record <i>`) in the field, and in the reason too (the CLI prints
 * reasons).
 */
export function lineProblem (place: string, field: string, reason: string): ErrorDetail {
  return { field: `${place}: ${field}`, reason: `${place}: ${field}: ${reason}` }
}

const FIELDS = new Set(['type', 'user', 'role', 'org', 'name', 'expires_at', 'key', 'sha256'])
const SHA256_HEX = /^[0-9a-f]{64}$/
// what the gateway's credential stage accepts: one token68 (extract-credential.ts)
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/

/**
 * The lines of an import file, each checked in itself; every problem named with its
 * line (`field` is `line <n>: <field>`). Blank lines and lines starting with `#` are skipped.
 * `isNativeKey`: a token in keygate's own format is refused (it is never looked up as imported).
 */
export function parseImportLines (
  text: string,
  isNativeKey: (token: string) => boolean
): { inputs: ImportInput[], problems: ErrorDetail[] } {
  const records: Array<{ line: number, place: string, value: unknown }> = []
  for (const [i, raw] of text.split('\n').entries()) {
    const trimmed = raw.trim()
    if (trimmed === '' || trimmed.startsWith('#')) continue
    let value: unknown
    try {
      value = JSON.parse(trimmed)
    } catch {}
    records.push({ line: i + 1, place: `line ${i + 1}`, value })
  }
  return checkImportRecords(records, isNativeKey)
}

/**
 * The records of an admin API import (`POST /admin/v1/keys/import`: a JSON array of the
 * objects an import file has a line each), checked exactly as the file's lines; every
 * problem named with its index (`field` is `record <i>: <field>`, 0-based).
 */
export function parseImportRecords (
  values: readonly unknown[],
  isNativeKey: (token: string) => boolean
): { inputs: ImportInput[], problems: ErrorDetail[] } {
  return checkImportRecords(values.map((value, i) => ({ line: i, place: `record ${i}`, value })), isNativeKey)
}

function checkImportRecords (
  records: ReadonlyArray<{ line: number, place: string, value: unknown }>,
  isNativeKey: (token: string) => boolean
): { inputs: ImportInput[], problems: ErrorDetail[] } {
  const inputs: ImportInput[] = []
  const problems: ErrorDetail[] = []
  for (const { line, place, value: o } of records) {
    const bad = (field: string, reason: string): void => { problems.push(lineProblem(place, field, reason)) }
    if (typeof o !== 'object' || o === null || Array.isArray(o)) {
      bad(place.startsWith('line ') ? 'line' : 'record', 'not a JSON object')
      continue
    }
    const r = o as Record<string, unknown>
    const before = problems.length
    for (const f of Object.keys(r)) if (!FIELDS.has(f)) bad(f, 'unknown field')
    for (const f of FIELDS) if (r[f] !== undefined && typeof r[f] !== 'string') bad(f, 'must be a string')
    if (problems.length > before) continue
    const s = r as Record<string, string | undefined>
    if (s.type !== 'personal' && s.type !== 'bot') {
      bad('type', 'must be personal or bot')
      continue
    }
    const input: ImportInput = {
      line,
      place,
      type: s.type,
      user: s.user,
      role: s.role,
      // a personal key takes its org from its user: one named is checked against it (imports.ts)
      org: s.type === 'personal' ? undefined : s.org,
      statedOrg: s.type === 'personal' ? s.org : undefined,
      name: s.name,
      sha256: '',
      from: 'key'
    }
    for (const check of [checkKeyExclusions, checkKeyRequirements, checkKeyLabels]) {
      try {
        check(input)
      } catch (err: unknown) {
        if (!(err instanceof AdminError)) throw err
        bad('type', err.message)
      }
    }
    if ((s.key === undefined) === (s.sha256 === undefined)) {
      bad(
        'key',
        'exactly one of key (the plaintext) and sha256 is needed'
      )
    } else if (s.key !== undefined) {
      if (s.key.length > IMPORTED_KEY_MAX || !TOKEN68.test(s.key)) {
        bad(
          'key',
        `not a Bearer token the gateway accepts (token68 characters, at most ${IMPORTED_KEY_MAX})`
        )
      } else if (isNativeKey(s.key)) bad('key', 'a keygate key: it needs no import')
      else input.sha256 = createHash('sha256').update(s.key).digest('hex')
    } else if (!SHA256_HEX.test(s.sha256 as string)) bad('sha256', 'must be 64 lowercase hex digits')
    else {
      input.sha256 = s.sha256 as string
      input.from = 'sha256'
    }
    if (s.expires_at !== undefined) {
      const at = parseTimestamp(s.expires_at)
      if (at === undefined) bad('expires_at', 'not an ISO 8601 UTC timestamp')
      else input.expiresAt = isoTimestamp(at)
    }
    if (problems.length === before) inputs.push(input)
  }
  // the same token twice
  const seen = new Map<string, string>()
  for (const input of inputs) {
    const first = seen.get(input.sha256)
    if (first !== undefined) problems.push(lineProblem(input.place, 'key', `the same key as ${first}`))
    else seen.set(input.sha256, input.place)
  }
  return { inputs, problems }
}
