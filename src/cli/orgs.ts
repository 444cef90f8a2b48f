/**
 * `keygate orgs ...`: put, list, show: org records, whose rate limit every key of the org shares and whose
 * key_max_ttl caps its keys' lives.
 */
import type { Command } from 'commander'
import { duration, limitOrNull, rateLimitOrNone, withRegistry } from './context.js'
import { printJson, printTable } from './output.js'
import { orgMeterCommand } from './meter.js'

const ORG_COLUMNS = ['org', 'name', 'rate_limit', 'rate_limit_used', 'key_max_ttl', 'quota', 'credits']

/** `--key-max-ttl 90d`, or `none` */
function ttlOrNone (value: string): string {
  if (value !== 'none') duration(value)
  return value
}

export function orgsCommand (program: Command): void {
  const orgs = program.command('orgs')
    .description('manage org records (a display name, and a rate limit shared by every key of the org)')

  orgs.command('put')
    .description("create or update an org's record; every gateway applies a changed limit within a second")
    .argument('<org>', 'the org, as users and keys name it')
    .option(
      '--rate-limit <limit>',
      'one bucket for every key of the org, e.g. 1000/1s or 100000/1d; "none" removes it (not given: kept)',
      rateLimitOrNone
    )
    .option(
      '--key-max-ttl <duration>',
      'every key created or rotated in the org expires within this, e.g. 90d; "none" removes it (not given: kept)',
      ttlOrNone
    )
    .option('--name <text>', 'a display name')
    .option('--json', 'print the result as JSON')
    .action(async (org: string, opts: { rateLimit?: string, keyMaxTtl?: string, name?: string, json?: boolean }) => {
      const keyMaxTtl = opts.keyMaxTtl === 'none' ? null : opts.keyMaxTtl
      const view = await withRegistry(({ actions }) => actions.putOrg(
        org,
        { rateLimit: limitOrNull(opts.rateLimit), keyMaxTtl, name: opts.name }
      ))
      if (opts.json === true) printJson(view)
      else {
        process.stdout.write(
          `org ${org}: ${view.rate_limit !== undefined ? `rate limit ${view.rate_limit}` : 'no rate limit'}, ` +
          `${view.key_max_ttl !== undefined ? `keys live ${view.key_max_ttl} at most` : 'no key max TTL'}` +
          `${view.name !== undefined ? ` (${view.name})` : ''}\n`
        )
      }
    })

  orgMeterCommand(orgs)

  orgs.command('list')
    .description('list org records, with each limit and its use in the current window')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const list = await withRegistry(({ actions }) => actions.listOrgs())
      if (opts.json === true) printJson(list)
      else printTable(list, ORG_COLUMNS)
    })

  orgs.command('show')
    .description("show one org's record, with its limit's use in the current window")
    .argument('<org>', 'the org')
    .option('--json', 'print the result as JSON')
    .action(async (org: string, opts: { json?: boolean }) => {
      const view = await withRegistry(({ actions }) => actions.showOrg(org))
      if (opts.json === true) {
        printJson(view)
        return
      }
      for (const field of ORG_COLUMNS) {
        process.stdout.write(`${field.padEnd(16)} ${String((view as Record<string, unknown>)[field] ?? '-')}\n`)
      }
    })
}
