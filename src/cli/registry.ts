/**
 * `keygate registry export|plan|apply`: roles, org records, users and identities as a YAML file kept
 * in git (src/admin/as-code/; docs/registry-as-code.md). Never a key, a secret or a hash.
 *
 * Exit status of `plan`: 0 nothing would change, 3 changes are pending, 1 the file is
 * invalid (every problem listed on stderr, `<file>:<line>:<col>: <path>: <message>`).
 * `apply`: 0 applied (or nothing to do), 1 invalid, and then nothing was written.
 */
import { readFileSync, statSync } from 'node:fs'
import type { Command } from 'commander'
import { registryYaml } from '../admin/as-code/registry-export.js'
import { MAX_FILE_BYTES, parseRegistryFile } from '../admin/as-code/registry-file.js'
import type { ApplyResult, Change, FileProblem, RegistryFile } from '../admin/model/registry-fields.js'
import { UsageError, withRegistry } from './context.js'
import { printJson } from './output.js'

/** `plan`'s exit status when changes are pending (as `check`'s for a denial) */
export const EXIT_PENDING = 3

export function registryCommand (program: Command): void {
  const registry = program.command('registry')
    .description('the registry as code: roles, org records, users and identities as a YAML file')

  registry.command('export')
    .description('print roles, org records (limits, key policy) and users as YAML (never keys, secrets or hashes)')
    .option('--org <org>', "only this org's record and users, and the roles they act with")
    .action(async (opts: { org?: string }) => {
      process.stdout.write(registryYaml(await withRegistry(({ actions }) => actions.exportRegistry({ org: opts.org }))))
    })

  registry.command('plan')
    .description(
      'show what applying the file would create, change and (--prune) delete; exit 0 no change, 3 pending, 1 invalid'
    )
    .argument('<file>', 'the registry file (YAML)')
    .option('--prune', 'delete the roles, org records, users and identities the file does not name')
    .option('--json', 'print the result as JSON')
    .action(async (path: string, opts: { prune?: boolean, json?: boolean }) => {
      const file = readRegistryFile(path)
      const result = await withRegistry(({ actions }) => actions.planRegistry(file, opts.prune === true))
      report(path, result, opts.json === true, 'plan')
      if (result.ok && result.changes.length > 0) process.exitCode = EXIT_PENDING
    })

  registry.command('apply')
    .description('make exactly the changes plan shows, atomically and audited; a file with any problem changes nothing')
    .argument('<file>', 'the registry file (YAML)')
    .option('--prune', 'delete the roles, org records, users and identities the file does not name')
    .option('--json', 'print the result as JSON')
    .action(async (path: string, opts: { prune?: boolean, json?: boolean }) => {
      const file = readRegistryFile(path)
      const result = await withRegistry(({ actions }) => actions.applyRegistry(file, { prune: opts.prune === true }))
      report(path, result, opts.json === true, 'apply')
    })
}

function readRegistryFile (path: string): RegistryFile {
  let text: string
  try {
    if (path !== '-' && statSync(path).size > MAX_FILE_BYTES) {
      throw new UsageError(`${path} is larger than ${MAX_FILE_BYTES} bytes`)
    }
    text = readFileSync(path === '-' ? 0 : path, 'utf8')
  } catch (err: unknown) {
    if (err instanceof UsageError) throw err
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)
  }
  return parseRegistryFile(text)
}

function report (path: string, result: ApplyResult, json: boolean, what: 'plan' | 'apply'): void {
  if (!result.ok) {
    process.exitCode = 1
    if (json) {
      printJson({
        ok: false,
        file: path,
        problems: result.problems.map((p) => ({ ...p.place, path: p.path, message: p.message }))
      })
    } else {
      for (const p of result.problems) {
        process.stderr.write(`${placeText(path, p)}: ${p.path === '' ? '' : `${p.path}: `}${p.message}\n`)
      }
    }
    if (!json) {
      process.stderr.write(
        `${path}: ${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}; ` +
        `nothing ${what === 'apply' ? 'was' : 'would be'} changed\n`
      )
    }
    return
  }
  if (json) {
    printJson({ ok: true, file: path, applied: what === 'apply', changes: result.changes })
    return
  }
  for (const c of result.changes) process.stdout.write(changeText(c))
  const n = (op: Change['op']): number => result.changes.filter((c) => c.op === op).length
  if (result.changes.length === 0) process.stdout.write('No changes: the registry matches the file.\n')
  else if (what === 'apply') {
    process.stdout.write(`Applied: ${n('create')} created, ${n('change')} changed, ${n('delete')} deleted.\n`)
  } else process.stdout.write(`Plan: ${n('create')} to create, ${n('change')} to change, ${n('delete')} to delete.\n`)
}

function placeText (path: string, p: FileProblem): string {
  return p.place === undefined ? `${path}` : `${path}:${p.place.line}:${p.place.col}`
}

const SIGN = { create: '+', change: '~', delete: '-' } as const

function changeText (c: Change): string {
  const lines = [`${SIGN[c.op]} ${c.kind} ${c.name}\n`]
  // (an identity's meta by its size alone, as the audit trail shows it: it is the team's own data)
  const shown = (field: string, v: string | undefined): string | undefined =>
    field === 'meta' && v !== undefined ? `(${Buffer.byteLength(v)} bytes)` : v
  for (const f of c.fields) {
    const from = shown(f.field, f.from)
    const to = shown(f.field, f.to)
    if (c.op === 'create') lines.push(`    ${f.field}: ${to ?? ''}\n`)
    else if (c.op === 'delete') lines.push(`    ${f.field}: ${from ?? ''}\n`)
    else lines.push(`    ${f.field}: ${from ?? '(none)'} -> ${to ?? '(none)'}\n`)
  }
  if (c.revokesKeys !== undefined) lines.push(`    revokes personal keys: ${c.revokesKeys.join(' ')}\n`)
  return lines.join('')
}
