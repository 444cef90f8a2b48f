/** Assertion key files for tests: written as `keygate assertion-key generate` writes them. */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type Alg = 'EdDSA' | 'ES256'

export interface KeyFile {
  alg: Alg
  /** the private key, PEM PKCS#8 */
  file: string
  /** its public half, PEM SPKI */
  publicFile: string
  privateKey: KeyObject
}

export function newPrivateKey (alg: Alg): KeyObject {
  return alg === 'EdDSA' ? generateKeyPairSync('ed25519').privateKey : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
}

/** A new key of `alg`, in a directory of its own. */
export function writeKeyFile (alg: Alg): KeyFile {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-assertion-'))
  const privateKey = newPrivateKey(alg)
  const file = join(dir, 'assertion.pem')
  const publicFile = join(dir, 'assertion.pub.pem')
  writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  writeFileSync(publicFile, createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }))
  return { alg, file, publicFile, privateKey }
}

/** A file in a directory of its own holding `text`. */
export function writeTextFile (name: string, text: string | Buffer): string {
  const file = join(mkdtempSync(join(tmpdir(), 'keygate-assertion-')), name)
  writeFileSync(file, text)
  return file
}
