/**
 * `keygate identities put|show|list|delete|meter` (docs/identities.md): identities, whose
 * BOT keys share their rate limit, quota and credits and `meta`. `delete` is refused
 * while keys name the identity, unless `--force`, which revokes them. `--meta` takes a
 * JSON object (at most 1 KB); the CLI never prints a refused value back.
 */
import { InvalidArgumentError, type Command } from 'commander'
import { limitOrNull, rateLimitOrNone, UsageError, withRegistry } from './context.js'
import { changeOf, creditsArg, printAllowance, quotaOrNone, report, type MeterOpts } from './meter.js'
import { printJson, printTable } from './output.js'

const COLUMNS = ['id', 'org', 'external_id', 'rate_limit', 'quota', 'credits', 'keys']

/** `--meta '{"plan":"pro"}'` (a JSON object), or `none` */
export function metaArg (value: string): Record<string, unknown> | null {
  if (value === 'none') return null
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    throw new InvalidArgumentError('expected a JSON object, or none')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError('expected a JSON object, or none')
  }
  return parsed as Record<string, unknown>
}

interface PutOpts {
  org?: string
  externalId?: string
  meta?: Record<string, unknown> | null
  rateLimit?: string
  quota?: string
  credits?: number
  json?: boolean
}

export function identitiesCommand (program: Command): void {
  const identities = program.command('identities')
    .description('manage identities: one customer\'s BOT keys, sharing its rate limit, quota, credits and meta')

  identities.command('put')
    .description('create or change an identity; every gateway applies a change within a second')
    .argument('<id>', 'the identity id (letters, digits and _.@:-)')
    .option('--org <org>', 'a new identity\'s org (never changed)')
    .option('--external-id <id>', 'the customer\'s id in your own system, unique in the org (X-Auth-Identity)')
    .option('--meta <json>', 'a JSON object of at most 1 KB, sent upstream (X-Auth-Meta); "none" removes it', metaArg)
    .option('--rate-limit <limit>', 'one bucket for every key of the identity; "none" removes it', rateLimitOrNone)
    .option('--quota <quota>', 'one allowance for every key of the identity; "none" removes it', quotaOrNone)
    .option('--credits <n>', 'credits granted (a new identity; later: identities meter --add-credits)', creditsArg)
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: PutOpts) => {
      const { created, identity } = await withRegistry(({ actions }) => actions.putIdentity(id, {
        org: opts.org,
        externalId: opts.externalId,
        meta: opts.meta,
        rateLimit: limitOrNull(opts.rateLimit),
        quota: opts.quota === undefined ? undefined : opts.quota === 'none' ? null : opts.quota,
        credits: opts.credits
      }))
      if (opts.json === true) printJson({ created, identity })
      else process.stdout.write(`identity ${id} ${created ? 'created' : 'updated'} (org ${identity.org})\n`)
    })

  identities.command('list')
    .description('list identities (an org admin: its own org\'s)')
    .option('--org <org>', 'only this org\'s')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { org?: string, json?: boolean }) => {
      const list = await withRegistry(({ actions }) => actions.listIdentities(opts.org))
      if (opts.json === true) printJson(list)
      else printTable(list.map((v) => ({ ...v, keys: String(v.keys?.length ?? 0) })), COLUMNS)
    })

  identities.command('show')
    .description('show an identity: its keys, its limit\'s use, its allowance and its meta')
    .argument('<id>', 'the identity id')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const view = await withRegistry(({ actions }) => actions.showIdentity(id))
      if (opts.json === true) {
        printJson(view)
        return
      }
      for (const field of ['id', 'org', 'external_id', 'rate_limit', 'rate_limit_used'] as const) {
        process.stdout.write(`${field.padEnd(16)} ${String(view[field] ?? '-')}\n`)
      }
      process.stdout.write(`${'meta'.padEnd(16)} ${view.meta === undefined ? '-' : JSON.stringify(view.meta)}\n`)
      process.stdout.write(`${'keys'.padEnd(16)} ${(view.keys ?? []).join(' ') || '-'}\n`)
      if (view.allowance !== undefined) printAllowance(`identity ${id}`, view.allowance)
    })

  identities.command('delete')
    .description('delete an identity; refused while keys name it, unless --force, which revokes them')
    .argument('<id>', 'the identity id')
    .option('--force', 'revoke the identity\'s keys with it')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { force?: boolean, json?: boolean }) => {
      const { revoked } = await withRegistry(({ actions }) => actions.deleteIdentity(id, opts.force === true))
      if (opts.json === true) printJson({ deleted: id, revoked })
      else process.stdout.write(`identity ${id} deleted${revoked.length > 0 ? `; revoked ${revoked.join(' ')}` : ''}\n`)
    })

  identities.command('meter')
    .description('set or remove an identity\'s quota, add credits (one balance for all its keys)')
    .argument('<id>', 'the identity id')
    .option('--quota <quota>', 'e.g. 100000/month; "none" removes it (not given: kept)', quotaOrNone)
    .option('--add-credits <n>', 'credits granted on top of the balance (at least 1)', creditsArg)
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: MeterOpts) => {
      if (opts.quota === undefined && opts.addCredits === undefined) {
        throw new UsageError('give --quota (or --quota none) or --add-credits')
      }
      const { changed } = await withRegistry(({ actions }) => actions.meterIdentity(id, changeOf(opts)))
      report(`identity ${id}`, opts, changed)
    })
}
