/** `keygate audit`: the trail of admin changes made through keygate (not direct redis-cli edits). */
import type { Command } from 'commander'
import { duration, withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

export function auditCommand (program: Command): void {
  program.command('audit')
    .description('print the audit trail: time, actor, action, target, result (changes made directly in Redis are not in it)')
    .option('--since <duration>', 'only entries newer than this, e.g. 24h', duration)
    .option('--json', 'print the result as JSON')
    .action(async (opts: { since?: number, json?: boolean }) => {
      const entries = await withRegistry(({ store }) => store.readAudit(opts.since))
      if (opts.json === true) printJson(entries)
      else printTable(entries, ['time', 'actor', 'action', 'target', 'result'])
    })
}
