/** `keygate users ...`: put, deactivate, activate, list. */
import type { Command } from 'commander'
import { withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

export function usersCommand (program: Command): void {
  const users = program.command('users').description('manage users')

  users.command('put')
    .description('create or update a user (a new user is active; an existing user keeps its status)')
    .argument('<userId>', 'user id')
    .requiredOption('--org <org>', 'the user\'s organisation')
    .requiredOption('--role <role>', 'the role the user\'s personal keys act with')
    .option('--name <name>', 'display name')
    .option('--email <email>', 'email address')
    .option('--json', 'print the result as JSON')
    .action(async (userId: string, opts: { org: string, role: string, name?: string, email?: string, json?: boolean }) => {
      const { created } = await withRegistry(({ store }) => store.putUser(userId, opts))
      if (opts.json === true) printJson({ id: userId, org: opts.org, role: opts.role, created })
      else process.stdout.write(`user ${userId} ${created ? 'created' : 'updated'} (org ${opts.org}, role ${opts.role})\n`)
    })

  for (const [name, status, help] of [
    ['deactivate', 'deactivated', 'deactivate a user: all of their personal keys stop working at once (BOT keys are unaffected)'],
    ['activate', 'active', 'reactivate a user: their personal keys work again (the key records were never touched)']
  ] as const) {
    users.command(name)
      .description(help)
      .argument('<userId>', 'user id')
      .option('--json', 'print the result as JSON')
      .action(async (userId: string, opts: { json?: boolean }) => {
        const { changed } = await withRegistry(({ store }) => store.setUserStatus(userId, status))
        if (opts.json === true) printJson({ id: userId, status, changed })
        else process.stdout.write(`user ${userId} ${changed ? 'is now' : 'was already'} ${status}\n`)
      })
  }

  users.command('list')
    .description('list users')
    .option('--org <org>', 'only users of this org')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { org?: string, json?: boolean }) => {
      const list = await withRegistry(({ store }) => store.listUsers({ org: opts.org }))
      if (opts.json === true) printJson(list)
      else printTable(list, ['id', 'org', 'role', 'status', 'name', 'email'])
    })
}
