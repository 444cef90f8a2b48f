/** `keygate roles ...`: put, list, delete. */
import type { Command } from 'commander'
import { limitOrNull, rateLimitOrNone, withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

export function rolesCommand (program: Command): void {
  const roles = program.command('roles').description('manage roles (permission sets)')

  roles.command('put')
    .description('create or replace a role; every key acting with it sees the change at once')
    .argument('<role>', 'role name')
    .requiredOption(
      '--permissions <list>',
      'space-separated permissions, e.g. "users:read users:write" (users:* and * are wildcards)'
    )
    .option('--description <text>', 'what the role is for')
    .option(
      '--rate-limit <limit>',
      'a rate limit for every key acting with the role, each its own bucket, e.g. 100/1s; "none" removes it (not ' +
      'given: kept)',
      rateLimitOrNone
    )
    .option('--json', 'print the result as JSON')
    .action(async (
      role: string, opts: { permissions: string, description?: string, rateLimit?: string, json?: boolean }
    ) => {
      const permissions = opts.permissions.split(/\s+/).filter((p) => p !== '')
      const view = await withRegistry(({ actions }) => actions.putRole(
        role,
        permissions,
        opts.description,
        limitOrNull(opts.rateLimit)
      ))
      if (opts.json === true) printJson(view)
      else {
        process.stdout.write(
          `role ${role}: ${permissions.join(' ') || '(no permissions)'}` +
          `${view.rate_limit !== undefined ? `, rate limit ${view.rate_limit}` : ''}\n`
        )
      }
    })

  roles.command('list')
    .description('list roles and their permissions')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const list = await withRegistry(({ actions }) => actions.listRoles())
      if (opts.json === true) printJson(list)
      else printTable(list, ['name', 'permissions', 'description', 'rate_limit'])
    })

  roles.command('delete')
    .description('delete a role; refused while users or BOT keys use it, unless --force')
    .argument('<role>', 'role name')
    .option('--force', 'delete even if used (users and BOT keys with it then have no permissions)')
    .option('--json', 'print the result as JSON')
    .action(async (role: string, opts: { force?: boolean, json?: boolean }) => {
      const refs = await withRegistry(({ actions }) => actions.deleteRole(role, opts.force === true))
      if (opts.json === true) printJson({ name: role, deleted: true, ...refs })
      else {
        process.stdout.write(
          `role ${role} deleted${refs.users.length + refs.keys.length > 0
            ? ` (it was used by ${[...refs.users, ...refs.keys].join(', ')})`
            : ''}\n`
        )
      }
    })
}
