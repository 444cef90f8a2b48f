/** `keygate users ...`: put, deactivate, activate, list. */
import type { Command } from 'commander'
import { withRegistry } from './context.js'
import { printJson, printTable, printWarnings } from './output.js'

export function usersCommand (program: Command): void {
  const users = program.command('users').description('manage users')

  users.command('put')
    .description('create or update a user (a new user is active; an existing user keeps its status and, ' +
      'without --org, its org)')
    .argument('<userId>', 'user id')
    .option('--org <org>', 'the user\'s organisation (a new user needs one)')
    .requiredOption('--role <role>', 'the role the user\'s personal keys act with')
    .option('--name <name>', 'display name')
    .option('--email <email>', 'email address')
    .option('--json', 'print the result as JSON')
    .action(async (
      userId: string, opts: { org?: string, role: string, name?: string, email?: string, json?: boolean }
    ) => {
      const { result: { created, org }, warnings } = await withRegistry(({ actions }) => actions.putUser(userId, opts))
      printWarnings(warnings)
      if (opts.json === true) printJson({ id: userId, org, role: opts.role, created })
      else {
        process.stdout.write(
          `user ${userId} ${created ? 'created' : 'updated'} (org ${org}, role ${opts.role})\n`
        )
      }
    })

  users.command('deactivate')
    .description(
      'deactivate a user: all of their personal keys stop working at once; ' +
      'the BOT keys they created keep working (listed) unless --revoke-created-keys'
    )
    .argument('<userId>', 'user id')
    .option('--revoke-created-keys', 'also revoke the BOT keys the user created, in the same change')
    .option('--json', 'print the result as JSON')
    .action(async (userId: string, opts: { revokeCreatedKeys?: boolean, json?: boolean }) => {
      const r = await withRegistry(({ actions }) => actions.setUserStatus(
        userId,
        'deactivated',
        { revokeCreatedKeys: opts.revokeCreatedKeys === true }
      ))
      if (opts.json === true) {
        printJson({
          id: userId,
          status: 'deactivated',
          changed: r.changed,
          created_keys: r.createdKeys,
          revoked_keys: r.revokedKeys
        })
        return
      }
      process.stdout.write(`user ${userId} ${r.changed ? 'is now' : 'was already'} deactivated\n`)
      if (r.revokedKeys.length > 0) {
        process.stdout.write(`revoked the BOT keys they created: ${r.revokedKeys.join(', ')}\n`)
      }
      if (r.createdKeys.length > 0) {
        process.stdout.write(
          `BOT keys they created still work: ${r.createdKeys.join(', ')} ` +
          '(revoke them with --revoke-created-keys, or keygate keys revoke <keyId>)\n'
        )
      }
    })

  users.command('activate')
    .description('reactivate a user: their personal keys work again (the key records were never touched)')
    .argument('<userId>', 'user id')
    .option('--json', 'print the result as JSON')
    .action(async (userId: string, opts: { json?: boolean }) => {
      const { changed } = await withRegistry(({ actions }) => actions.setUserStatus(userId, 'active'))
      if (opts.json === true) printJson({ id: userId, status: 'active', changed })
      else process.stdout.write(`user ${userId} ${changed ? 'is now' : 'was already'} active\n`)
    })

  users.command('list')
    .description('list users')
    .option('--org <org>', 'only users of this org')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { org?: string, json?: boolean }) => {
      const list = await withRegistry(({ actions }) => actions.listUsers({ org: opts.org }))
      if (opts.json === true) printJson(list)
      else printTable(list, ['id', 'org', 'role', 'status', 'name', 'email'])
    })
}
