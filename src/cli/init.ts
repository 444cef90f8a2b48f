/**
 * `keygate init`: the first admin. A role granting `keygate:admin`, a user with it, and
 * a personal key for that user, printed once: what signs in to the console and the admin
 * API. Run once: a registry that has the role or the user already is refused without
 * `--force`, which makes a new key for the same user (the role and the user are kept as
 * they are, and must still make an admin).
 */
import type { Command } from 'commander'
import { AdminError } from '../admin/model/errors.js'
import type { AdminActions } from '../admin/actions/index.js'
import type { RoleView, UserView } from '../admin/model/views.js'
import { duration, withRegistry } from './context.js'
import { printJson, printWarnings } from './output.js'

const ADMIN = 'keygate:admin'
const NINETY_DAYS_MS = 90 * 86_400_000

interface InitOptions {
  user: string
  org: string
  role: string
  name?: string
  email?: string
  expiresIn: number
  force?: boolean
  json?: boolean
}

async function orUndefined<T> (read: Promise<T>): Promise<T | undefined> {
  try {
    return await read
  } catch (err: unknown) {
    if (err instanceof AdminError && err.kind === 'not_found') return undefined
    throw err
  }
}

/** What stands in the way of making `o.user` an admin with `o.role`, if anything. */
function conflict (o: InitOptions, role: RoleView | undefined, user: UserView | undefined): string | undefined {
  if (role !== undefined && !role.permissions.includes(ADMIN)) {
    return `role ${o.role} exists and does not grant ${ADMIN}: name another with --role`
  }
  if (user !== undefined && user.role !== o.role) {
    return `user ${o.user} exists with role ${user.role}, not ${o.role}: name another with --user`
  }
  if (user !== undefined && user.status !== 'active') return `user ${o.user} is ${user.status}`
  return undefined
}

async function init (
  actions: AdminActions, o: InitOptions
): Promise<{ role: boolean, user: boolean, key: Awaited<ReturnType<AdminActions['createKey']>> }> {
  const role = await orUndefined(actions.showRole(o.role))
  const user = await orUndefined(actions.showUser(o.user))
  if ((role !== undefined || user !== undefined) && o.force !== true) {
    throw new Error('keygate is initialised already ' +
      `(${role !== undefined ? `role ${o.role}` : `user ${o.user}`} exists); ` +
      `--force makes a new key for ${o.user}`)
  }
  const problem = conflict(o, role, user)
  if (problem !== undefined) throw new Error(problem)
  if (role === undefined) await actions.putRole(o.role, [ADMIN], 'administers the registry (keygate init)')
  if (user === undefined) {
    await actions.putUser(o.user, { org: o.org, role: o.role, name: o.name, email: o.email }, { createOnly: true })
  }
  const key = await actions.createKey({
    type: 'personal', user: o.user, name: 'keygate init', expiresInMs: o.expiresIn
  })
  return { role: role === undefined, user: user === undefined, key }
}

export function initCommand (program: Command): void {
  program.command('init')
    .description(`create the first admin: a role granting ${ADMIN}, a user with it, and a key printed once`)
    .option('--user <userId>', 'the admin user', 'admin')
    .option('--org <org>', 'the admin user\'s org', 'admin')
    .option('--role <role>', 'the role granting keygate:admin', 'keygate-admin')
    .option('--name <name>', 'the admin\'s display name')
    .option('--email <email>', 'the admin\'s email (SSO sign-in by email matches it)')
    .option('--expires-in <duration>', 'the key\'s lifetime, e.g. 24h or 30d', duration, NINETY_DAYS_MS)
    .option('--force', 'initialised already: make a new key for the admin user')
    .option('--json', 'print the result as JSON')
    .action(async (o: InitOptions) => {
      const { role, user, key: { result: key, warnings } } =
        await withRegistry(async ({ actions }) => await init(actions, o))
      printWarnings(warnings)
      if (o.json === true) {
        printJson({ role: o.role, role_created: role, user: o.user, user_created: user, key })
        return
      }
      process.stdout.write(
        `${role ? 'Created' : 'Kept'} role ${o.role} (${ADMIN}); ` +
        `${user ? 'created' : 'kept'} user ${o.user} (org ${o.org}).\n` +
        `Key for ${o.user}, id ${key.id}${key.expires_at !== undefined ? `, expires ${key.expires_at}` : ''}:\n\n` +
        `  ${key.key}\n\n` +
        'Copy it now: it is shown only this once. It signs in to the console (/console on the admin\n' +
        'listener) and the admin API (Authorization: Bearer). For automation without a key, set\n' +
        'KEYGATE_ADMIN_TOKEN (e.g. openssl rand -hex 32) in the gateway\'s environment instead.\n'
      )
    })
}
