/** `keygate migrate ...`: one-off rewrites of registry records into their current form. */
import type { Command } from 'commander'
import { withRegistry } from './context.js'
import { printJson } from './output.js'

export function migrateCommand (program: Command): void {
  const migrate = program.command('migrate')
    .description('rewrite registry records into their current form (idempotent; safe while the gateway runs)')

  migrate.command('created-by')
    .description(
      'type every key\'s created_by: an untyped value (a user id) becomes user:<id>; ' +
      'cli:*, key:* and admin-token stay actors that own nothing'
    )
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const r = await withRegistry(({ actions }) => actions.migrateCreatedBy())
      if (opts.json === true) printJson(r)
      else {
        process.stdout.write(
          `created_by typed on ${r.rewritten.length} key(s); ` +
          `${r.unindexed.length} BOT key(s) no longer listed under an actor\n`
        )
      }
    })
}
