/**
 * The assertion's key files, read once at start-up: the signing key (PEM PKCS#8,
 * Ed25519 or P-256) and the previous keys whose public halves stay in the JWK Set.
 * Read synchronously, so that the config loader (and `keygate config check`) reports a
 * missing, unreadable or unsuitable file with the other configuration problems, each
 * naming its setting. Messages name the file and the problem, never its content.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { AssertionConfig } from './schema.js'

export type AssertionAlg = 'EdDSA' | 'ES256'

export interface AssertionKeys {
  alg: AssertionAlg
  privateKey: KeyObject
  /** the signing key's public half, then each previous key's, in the order configured */
  publicKeys: Array<{ alg: AssertionAlg, key: KeyObject }>
}

/** The settings that name the signing key: the variable overrides the field. */
export const KEY_FILE_ENV = 'KEYGATE_ASSERTION_KEY_FILE'
export const KEY_FILE_FIELD = 'identity.assertion.key_file'
/** How a message names the signing key's setting when its source is not known. */
const EITHER = `${KEY_FILE_ENV} / ${KEY_FILE_FIELD}`

export class AssertionKeyError extends Error {
  override readonly name = 'AssertionKeyError'
  constructor (readonly problems: string[]) {
    super('invalid assertion keys:\n' + problems.map((p) => `  - ${p}`).join('\n'))
  }
}

const PKCS8 = '-----BEGIN PRIVATE KEY-----'
const GENERATE_HINT = '`keygate assertion-key generate <file>` writes one'

/** The algorithm for a key, or undefined when keygate does not sign with its type. */
export function algorithmOf (key: KeyObject): AssertionAlg | undefined {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA'
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256'
  return undefined
}

function typeName (key: KeyObject): string {
  const curve = key.asymmetricKeyDetails?.namedCurve
  return curve === undefined ? String(key.asymmetricKeyType) : `${String(key.asymmetricKeyType)} ${curve}`
}

/**
 * The keys for `a`, or the problems (each naming its setting). `keyFileSetting` names
 * where `a.key_file` came from. Disabled: no keys and no problems, whatever is set.
 */
export function readAssertionKeys (
  a: AssertionConfig, keyFileSetting: string = EITHER
): { keys?: AssertionKeys, problems: string[] } {
  if (!a.enabled) return { problems: [] }
  const problems: string[] = []
  let signing: { alg: AssertionAlg, key: KeyObject } | undefined
  if (a.key_file === undefined) {
    problems.push(
      `identity.assertion.enabled: a signing key is needed: set ${KEY_FILE_ENV} (or ${KEY_FILE_FIELD}) ` +
      `to a PEM PKCS#8 file; ${GENERATE_HINT}`
    )
  } else {
    const file = a.key_file
    const read = readPem(file)
    if ('problem' in read) {
      problems.push(`${keyFileSetting}: ${read.problem}`)
    } else if (!read.text.startsWith(PKCS8)) {
      problems.push(
        `${keyFileSetting}: ${file} is not an unencrypted PEM PKCS#8 private key (${PKCS8}); ${GENERATE_HINT}`
      )
    } else {
      const parsed = parse(() => createPrivateKey(read.text), file)
      if (typeof parsed === 'string') problems.push(`${keyFileSetting}: ${parsed}`)
      else signing = parsed
    }
  }
  const previous: Array<{ alg: AssertionAlg, key: KeyObject }> = []
  a.previous_key_files.forEach((file, i) => {
    const read = readPem(file)
    // createPublicKey takes a public key (SPKI) or derives it from a private one
    const parsed = 'problem' in read ? read.problem : parse(() => createPublicKey(read.text), file)
    if (typeof parsed === 'string') problems.push(`identity.assertion.previous_key_files[${i}]: ${parsed}`)
    else previous.push(parsed)
  })
  if (problems.length > 0 || signing === undefined) return { problems }
  return {
    keys: {
      alg: signing.alg,
      privateKey: signing.key,
      publicKeys: [{ alg: signing.alg, key: createPublicKey(signing.key) }, ...previous]
    },
    problems
  }
}

/** The keys for `a`; throws an AssertionKeyError listing every problem. */
export function assertionKeys (a: AssertionConfig, keyFileSetting?: string): AssertionKeys | undefined {
  const { keys, problems } = readAssertionKeys(a, keyFileSetting)
  if (problems.length > 0) throw new AssertionKeyError(problems)
  return keys
}

/** The file's text, or why it cannot be read. */
function readPem (file: string): { text: string } | { problem: string } {
  try {
    return { text: readFileSync(file, 'utf8').trimStart() }
  } catch (err: unknown) {
    const code = (err as NodeJS.ErrnoException).code
    const why = code === 'ENOENT'
      ? 'no such file'
      : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory' : (code ?? 'unreadable')
    return { problem: `cannot read ${file}: ${why}` }
  }
}

/** A parsed key with its algorithm, or what is wrong with it. */
function parse (fn: () => KeyObject, file: string): { alg: AssertionAlg, key: KeyObject } | string {
  let key: KeyObject
  try {
    key = fn()
  } catch {
    // (node's message is about the decoder, never the key; it is not needed here)
    return `${file} does not hold a PEM key keygate can read`
  }
  const alg = algorithmOf(key)
  if (alg === undefined) {
    return `${file} holds a ${typeName(key)} key; keygate signs with Ed25519 (EdDSA) or P-256 (ES256) keys`
  }
  return { alg, key }
}
