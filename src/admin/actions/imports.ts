/**
 * Keys brought from another system (docs/imports.md), from a file (the CLI) or the
 * admin API: each record read and checked in itself (`readImportLines`,
 * `readImportRecords`: a front end refuses a record's own problems before anything is
 * read), then the whole import decided over a snapshot of every record it names
 * (policy/imports.ts) and written in one transaction, or not at all. Each key gets a
 * fresh random key id (never derived from the token: the id is shown in logs), `hash`
 * the token's SHA-256, `imported` set, and the lookup `<prefix>imported:<sha256>` ->
 * key id that the gateway reads for a token not in keygate's format.
 */
import { newKeyId, parseKey, type KeyPrefixes } from '../../registry/key-format.js'
import { ownerOf, rootUserOf } from '../model/actors.js'
import type { ErrorDetail } from '../model/errors.js'
import { parseImportLines, parseImportRecords, type ImportInput } from '../policy/import-records.js'
import { decideImport } from '../policy/imports.js'
import { decideKeyCount } from '../policy/key-bounds.js'
import { ownedKeyStates } from '../store/key-bounds.js'
import { addImportedLookup, addKey } from '../store/keys.js'
import { callerNames, write, type ActionContext, type Warned } from './context.js'

export { importRefused, type ImportInput } from '../policy/import-records.js'

export interface ImportedKey {
  line: number
  id: string
  type: 'personal' | 'bot'
  org: string
  name: string
}

/** The lines of an import file, each checked in itself (a keygate key needs no import: refused). */
export function readImportLines (
  text: string,
  keyPrefix: KeyPrefixes
): { inputs: ImportInput[], problems: ErrorDetail[] } {
  return parseImportLines(text, isNativeKey(keyPrefix))
}

/** The records of an admin API import (a JSON array), each checked as a file's line. */
export function readImportRecords (values: readonly unknown[], keyPrefix: KeyPrefixes): {
  inputs: ImportInput[],
  problems: ErrorDetail[]
} {
  return parseImportRecords(values, isNativeKey(keyPrefix))
}

function isNativeKey (keyPrefix: KeyPrefixes): (token: string) => boolean {
  return (token) => parseKey(token, keyPrefix) !== 'malformed_credential'
}

/** Every record written, or none; one audit entry `key.import` per key. */
export async function importKeys (
  a: ActionContext,
  inputs: readonly ImportInput[],
  now = Date.now()
): Promise<Warned<ImportedKey[]>> {
  const caller = callerNames(a.scope)
  return await write(a, 'key.import', `keys:${inputs.length}`, async (w) => {
    // the owners, the creators, the orgs, and the tokens' lookups; then the users' roles and orgs
    const snap = await w.read({
      users: [...inputs.map((i) => i.user), ...inputs.map((i) => ownerOf(i.createdBy)), caller.user],
      roles: inputs.map((i) => i.role),
      orgs: [...inputs.map((i) => i.org), caller.org],
      imported: inputs.map((i) => i.sha256)
    })
    const users = [...snap.users.values()]
    // (and the keys imported already: an org admin is told the id of its own org's only)
    await w.read({ roles: users.map((u) => u.role), orgs: users.map((u) => u.org), keys: snap.imported.values() }, snap)
    const { records, warnings } = decideImport(
      a.scope,
      snap,
      inputs,
      { selfServiceMaxTtlMs: a.selfServiceMaxTtlMs, actor: a.store.actor, now }
    )
    // each owner's live keys, with the ones this import adds, within keys.max_per_user
    const adding = new Map<string, number>()
    for (const { record } of records) {
      const owner = rootUserOf({ type: record.type as string, ...record })
      if (owner !== undefined) adding.set(owner, (adding.get(owner) ?? 0) + 1)
    }
    for (const [owner, n] of adding) {
      decideKeyCount(owner, await ownedKeyStates(a.store.redis, a.store, owner, now), a.keyBounds.maxPerUser, n)
    }
    const tx = w.multi()
    const out: ImportedKey[] = []
    for (const { input, org, record } of records) {
      const id = newKeyId()
      addKey(a.store, tx, id, { type: input.type, hash: input.sha256, ...record })
      addImportedLookup(a.store, tx, input.sha256, id)
      tx.xadd(...a.store.audit.changeArgs('key.import', `key:${id}`, 'ok', record, org))
      out.push({ line: input.line, id, type: input.type, org, name: record.name as string })
    }
    await w.commit(
      tx,
      'a key\'s user or role changed, or a key was imported, during the import; nothing was written, try again'
    )
    return { result: out, warnings }
  })
}
