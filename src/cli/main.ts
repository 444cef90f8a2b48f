#!/usr/bin/env node
/**
 * `keygate`: one executable for the gateway and its registry.
 * Exit status: 0 success, 1 failed operation (message on stderr), 2 bad usage (a
 * command group without its command prints the group's help), 3 a `check` that
 * denies, or a `registry plan` with changes pending. With `--json`, an error is a JSON object on stderr too.
 */
import { Command, CommanderError } from 'commander'
import { ConfigError, configFile, loadConfig } from '../config/load.js'
import { AdminError, CODE_OF_KIND, type ErrorDetail } from '../admin/model/errors.js'
import { describeTarget, parseRedisUrl } from '../config/redis-url.js'
import { redisDidNotAnswer } from '../registry/redis-replies.js'
import { VERSION } from '../version.js'
import { assertionKeyCommand } from './assertion-key.js'
import { auditCommand } from './audit.js'
import { usageCommand } from './usage.js'
import { checkCommand } from './check.js'
import { configCommand } from './config-check.js'
import { cliConfig, RedisUnreachable, UsageError } from './context.js'
import { healthCommand } from './health.js'
import { unsupportedNodeWarning } from './node-version.js'
import { initCommand } from './init.js'
import { keysCommand } from './keys.js'
import { migrateCommand } from './migrate.js'
import { orgsCommand } from './orgs.js'
import { identitiesCommand } from './identities.js'
import { registryCommand } from './registry.js'
import { rolesCommand } from './roles.js'
import { usersCommand } from './users.js'
import { webhooksCommand } from './webhooks.js'

/** `--json` anywhere before `--`: errors are printed as JSON too. */
const argv = process.argv.slice(2)
const json = argv.slice(0, argv.includes('--') ? argv.indexOf('--') : argv.length).includes('--json')

const program = new Command('keygate')
  .description('API-key authentication gateway: Redis registry of keys, users, roles and orgs')
  .version(VERSION, '-V, --version', 'print the version')
  .exitOverride()
// (settings made before the commands are added are inherited by them)
if (json) program.configureOutput({ outputError: () => {} })
else program.showHelpAfterError()

program.command('serve')
  .description('run the gateway: data plane and admin plane')
  .option('-c, --config <file>', 'the configuration file (default: KEYGATE_CONFIG, else config/keygate.yaml)')
  .option(
    '--workers <n>',
    'worker processes sharing the ports, each with its own cache: a number or "auto" (one per core)',
    '1'
  )
  .action(async (opts: { workers: string, config?: string }) => {
    // (the gateway's modules, workers.js's metrics among them, are loaded only here: they would slow every other
    // command's start)
    const { parseWorkers } = await import('../workers.js')
    let workers: number
    try {
      workers = parseWorkers(opts.workers)
    } catch (err: unknown) {
      throw new UsageError((err as Error).message)
    }
    const { serve } = await import('../server.js')
    await serve(loadConfig(opts.config ?? configFile()), { workers })
  })

configCommand(program)
initCommand(program)
keysCommand(program)
usersCommand(program)
rolesCommand(program)
orgsCommand(program)
webhooksCommand(program)
identitiesCommand(program)
registryCommand(program)
auditCommand(program)
usageCommand(program)
checkCommand(program)
migrateCommand(program)
healthCommand(program)
assertionKeyCommand(program)

/**
 * The exit status of a failed command and its error: `code` (`usage`, `config`, `redis`,
 * `failed`, or for a refused registry write the admin API's code), the message, and
 * the problems, each as a detail. No message: commander printed it already.
 */
function failure (err: unknown): { exit: number, code: string, message?: string, details?: readonly ErrorDetail[] } {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return { exit: 0, code: 'help' }
    // a command group without its command: its help, as a usage error
    if (err.code === 'commander.help') {
      return {
        exit: err.exitCode === 0 ? 0 : 2,
        code: 'usage',
        message: 'a command is needed (see the help above)'
      }
    }
    return { exit: 2, code: 'usage', message: err.message.replace(/^error: /, '') }
  }
  if (err instanceof UsageError) return { exit: 2, code: 'usage', message: err.message }
  // a refused registry write: its reasons, as the admin API gives them
  if (err instanceof AdminError) {
    return {
      exit: 1,
      code: CODE_OF_KIND[err.kind],
      message: err.message,
      details: err.details ?? [{ reason: err.message }]
    }
  }
  if (err instanceof ConfigError) {
    return {
      exit: 1,
      code: 'config',
      message: err.message,
      details: err.problems.map((reason) => ({ reason }))
    }
  }
  if (err instanceof RedisUnreachable || redisDidNotAnswer(err)) {
    return {
      exit: 1,
      code: 'redis',
      message: `cannot reach Redis (${redisTried()}; check KEYGATE_REDIS_URL or redis.url)`
    }
  }
  return { exit: 1, code: 'failed', message: err instanceof Error ? err.message : String(err) }
}

/** The Redis the command tried (hosts and database, never a credential). */
function redisTried (): string {
  try {
    return describeTarget(parseRedisUrl(cliConfig().redis.url))
  } catch {
    return 'the configured URL'
  }
}

/** Prints a failed command's error on stderr (one JSON object with `--json`) and returns its exit status. */
function exitCodeFor (err: unknown): number {
  const { exit, code, message, details } = failure(err)
  if (message === undefined) return exit
  if (json) {
    process.stderr.write(JSON.stringify({
      error: {
        code,
        message,
        ...(details === undefined ? {} : { details }),
        exit_code: exit
      }
    }) + '\n')
  } else if (err instanceof AdminError) {
    for (const d of details ?? []) process.stderr.write(`error: ${d.reason}\n`)
  } else if (!(err instanceof CommanderError)) {
    // (commander has printed its own message, or the help, already)
    process.stderr.write(`error: ${message}\n`)
  }
  return exit
}

const nodeWarning = unsupportedNodeWarning(process.version)
if (nodeWarning !== undefined) process.stderr.write(nodeWarning)

// A reader that stops early (`keygate audit | head`) is not an error of the command.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err
  process.exit(0)
})

try {
  await program.parseAsync(process.argv)
} catch (err: unknown) {
  process.exitCode = exitCodeFor(err)
}
