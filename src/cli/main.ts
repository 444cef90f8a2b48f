#!/usr/bin/env node
/**
 * `keygate`: one executable for the gateway and its registry.
 * Exit status: 0 success, 1 failed operation (message on stderr), 2 bad usage.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander'
import { ConfigError, configFile, loadConfig } from '../config/load.js'
import { parseDuration } from '../config/duration.js'
import { AdminError } from '../registry/admin-store.js'
import { serve } from '../server.js'
import { withRegistry } from './context.js'
import { printJson } from './output.js'

/** A bad usage found after parsing (exit status 2). */
class UsageError extends Error {}

function duration (value: string): number {
  const ms = parseDuration(value)
  if (ms === undefined || ms === 0) throw new InvalidArgumentError('expected a duration like 30s, 15m, 24h or 90d')
  return ms
}

const program = new Command('keygate')
  .description('API-key authentication gateway: Redis registry of keys, users and roles')
  .showHelpAfterError()
  .exitOverride()

program.command('serve')
  .description('run the gateway: data plane and admin plane (config: KEYGATE_CONFIG or config/keygate.yaml)')
  .action(async () => {
    await serve(loadConfig())
  })

program.command('config')
  .description('configuration commands')
  .command('check')
  .description('validate a configuration file; exit 0 when valid, 1 with every problem listed when not')
  .argument('[file]', 'the file to check (default: KEYGATE_CONFIG or config/keygate.yaml)')
  .option('--json', 'print the result as JSON')
  .action((file: string | undefined, opts: { json?: boolean }) => {
    const path = file ?? configFile()
    const config = loadConfig(path)
    if (opts.json === true) printJson({ ok: true, file: path, routes: config.routes.length, rules: config.rules.length })
    else process.stdout.write(`${path}: OK (${config.routes.length} routes, ${config.rules.length} rules)\n`)
  })

const roles = program.command('roles').description('manage roles (permission sets)')
roles.command('put')
  .description('create or replace a role')
  .argument('<role>', 'role name')
  .requiredOption('--permissions <list>', 'space-separated permissions, e.g. "users:read users:write"')
  .option('--description <text>', 'what the role is for')
  .option('--json', 'print the result as JSON')
  .action(async (role: string, opts: { permissions: string, description?: string, json?: boolean }) => {
    const permissions = opts.permissions.split(/\s+/).filter((p) => p !== '')
    await withRegistry(({ store }) => store.putRole(role, permissions, opts.description))
    if (opts.json === true) printJson({ role, permissions, description: opts.description })
    else process.stdout.write(`role ${role}: ${permissions.join(' ') || '(no permissions)'}\n`)
  })

const users = program.command('users').description('manage users')
users.command('put')
  .description('create or update a user (a new user is active)')
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

const keys = program.command('keys').description('manage API keys')
keys.command('create')
  .description('create a key; the key is printed once and cannot be shown again')
  .addOption(new Option('--type <type>', 'personal (acts as its user) or bot (acts with its own role)').choices(['personal', 'bot']).makeOptionMandatory())
  .option('--user <userId>', 'personal keys: the owning user')
  .option('--role <role>', 'BOT keys: the role the key acts with')
  .option('--org <org>', 'BOT keys: the organisation')
  .option('--name <name>', 'a label for the key')
  .option('--expires-in <duration>', 'e.g. 30s, 24h, 90d (default: never)', duration)
  .option('--created-by <userId>', 'the user creating the key (recorded, and indexed for BOT keys)')
  .option('--json', 'print the result as JSON')
  .action(async (opts: { type: 'personal' | 'bot', user?: string, role?: string, org?: string, name?: string, expiresIn?: number, createdBy?: string, json?: boolean }) => {
    if (opts.type === 'personal' && (opts.user === undefined || opts.role !== undefined || opts.org !== undefined)) {
      throw new UsageError('a personal key takes --user <userId> (its org and role come from the user), not --role or --org')
    }
    if (opts.type === 'bot' && (opts.role === undefined || opts.org === undefined || opts.user !== undefined)) {
      throw new UsageError('a BOT key takes --role <role> and --org <org>, not --user')
    }
    const created = await withRegistry(({ store }) => store.createKey({
      type: opts.type, user: opts.user, role: opts.role, org: opts.org, name: opts.name, expiresInMs: opts.expiresIn, createdBy: opts.createdBy
    }))
    if (opts.json === true) {
      printJson(created)
      return
    }
    process.stdout.write(
      `Created ${created.type} key ${created.id} (org ${created.org}${created.user !== undefined ? `, user ${created.user}` : `, role ${created.role ?? ''}`})\n\n` +
      `  ${created.key}\n\n` +
      'Copy it now: it is shown only this once and cannot be recovered (only its hash is stored).\n' +
      (created.expires_at !== undefined ? `It expires at ${created.expires_at}.\n` : '')
    )
  })

async function main (): Promise<void> {
  try {
    await program.parseAsync(process.argv)
  } catch (err: unknown) {
    process.exitCode = exitCodeFor(err)
  }
}

function exitCodeFor (err: unknown): number {
  if (err instanceof CommanderError) {
    // commander has printed its message (or the help) already
    return err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version' ? 0 : 2
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`)
    return 2
  }
  if (err instanceof ConfigError || err instanceof AdminError) {
    process.stderr.write(`error: ${err.message}\n`)
    return 1
  }
  const message = err instanceof Error ? err.message : String(err)
  process.stderr.write(`error: ${/ECONNREFUSED|max retries|Connection is closed|ETIMEDOUT|ENOTFOUND/i.test(message) ? 'cannot reach Redis (check KEYGATE_REDIS_URL or redis.url)' : message}\n`)
  return 1
}

await main()
