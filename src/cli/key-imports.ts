/**
 * `keygate keys leaked` and `keygate keys import`: keys that arrive from elsewhere, a file
 * (or stdin) of them at a time: a secret scanner's finds, revoked as leaked, and another
 * system's keys, imported whole or not at all (docs/imports.md, docs/leaks.md).
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import { importRefused, readImportLines } from '../admin/actions/index.js'
import { UsageError, withRegistry } from './context.js'
import { printJson, printWarnings } from './output.js'
import { keyPrefixesOf } from '../registry/key-format.js'

export function keyImportCommands (keys: Command): void {
  keys.command('leaked')
    .description(
      'revoke the keys a secret scanner found (one key a line; - reads stdin): each live one is revoked as leaked'
    )
    .argument('<file>', 'the keys, one a line (blank lines and lines starting with # are skipped)')
    .option('--source <text>', 'where they were found: a URL, or the scanner\'s name', 'keygate keys leaked')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { source: string, json?: boolean }) => {
      const tokens = readLines(file)
      if (tokens.length === 0) throw new UsageError(`${file === '-' ? 'stdin' : file} holds no key`)
      const outcomes = await withRegistry(({ actions }) => actions.reportLeaked(tokens.map((token) => ({
        token,
        source: opts.source
      }))))
      // never the key itself: its SHA-256, as the scanners' feedback has it, and its id
      interface Result { token_hash: string, label: string, id?: string, revoked?: boolean, env?: 'test' }
      const results = tokens.map((token, i): Result => {
        const o = outcomes[i]
        const tokenHash = createHash('sha256').update(token).digest('hex')
        return o?.id === undefined
          ? { token_hash: tokenHash, label: 'false_positive' }
          : {
              token_hash: tokenHash,
              label: o.label,
              id: o.id,
              revoked: o.revoked === true,
              ...(o.env === undefined ? {} : { env: o.env })
            }
      })
      if (opts.json === true) {
        printJson(results)
        return
      }
      for (const r of results) {
        const what = r.id === undefined
          ? 'not a keygate key'
          : `${r.env === 'test' ? 'test ' : ''}key ${r.id} ` +
            (r.revoked === true ? 'revoked as leaked' : 'was already revoked')
        process.stdout.write(`${r.token_hash.slice(0, 16)}  ${r.label.padEnd(14)}  ${what}\n`)
      }
    })

  keys.command('import')
    .description(
      'bring keys from another system (docs/imports.md): ' +
      'one JSON object a line (- reads stdin); every line is imported, or none'
    )
    .argument(
      '<file>',
      'JSON lines: type, user or role, org, name, optional expires_at, and key (the plaintext) or sha256'
    )
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      const text = readFileSync(file === '-' ? 0 : file, 'utf8')
      const { result: imported, warnings } = await withRegistry(async ({ config, actions }) => {
        const { inputs, problems } = readImportLines(text, keyPrefixesOf(config.keys))
        if (problems.length > 0) throw importRefused(problems)
        if (inputs.length === 0) throw new UsageError(`${file === '-' ? 'stdin' : file} holds no key`)
        return await actions.importKeys(inputs)
      })
      printWarnings(warnings)
      if (opts.json === true) printJson(imported)
      else {
        for (const k of imported) {
          process.stdout.write(`line ${k.line}: imported ${k.type} key ${k.id} (org ${k.org})\n`)
        }
      }
    })
}

/** A file's (or stdin's) non-blank lines, trimmed, `#` comments skipped. */
function readLines (file: string): string[] {
  const text = readFileSync(file === '-' ? 0 : file, 'utf8')
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
}
