/**
 * `keygate assertion-key generate <file> [--alg ES256|EdDSA]`: writes a new signing key
 * for the identity assertion (docs/assertion.md) as PEM PKCS#8, readable by its owner
 * only (mode 0600), and prints its kid. An existing file is never overwritten: the file
 * is created exclusively, so a key in use cannot be lost to a typo.
 */
import { Option, type Command } from 'commander'
import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { publicJwk } from '../assertion/assertions.js'
import type { AssertionAlg } from '../config/assertion-key-files.js'
import { printJson } from './output.js'

export function assertionKeyCommand (program: Command): void {
  program.command('assertion-key')
    .description('signing keys of the identity assertion (identity.assertion)')
    .command('generate')
    .description('write a new private key (PEM PKCS#8, mode 0600) to a file that does not exist yet, and print its kid')
    .argument('<file>', 'the file to create; point KEYGATE_ASSERTION_KEY_FILE at it')
    // P-256 is the default: every JWT library verifies ES256, and it signs faster here (docs/assertion.md)
    .addOption(new Option('--alg <alg>', 'the signature algorithm').choices(['ES256', 'EdDSA']).default('ES256'))
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { alg: AssertionAlg, json?: boolean }) => {
      const { privateKey } = opts.alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('ec', { namedCurve: 'P-256' })
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' })
      try {
        writeFileSync(file, pem, { mode: 0o600, flag: 'wx' })
      } catch (err: unknown) {
        const code = (err as NodeJS.ErrnoException).code
        throw new Error(code === 'EEXIST'
          ? `${file} already exists; a key file is never overwritten`
          : `cannot write ${file}: ${code ?? 'failed'}`)
      }
      const { kid } = await publicJwk(createPublicKey(privateKey), opts.alg)
      if (opts.json === true) printJson({ file, alg: opts.alg, kid })
      else process.stdout.write(`wrote ${file} (${opts.alg}, kid ${String(kid)})\n`)
    })
}
