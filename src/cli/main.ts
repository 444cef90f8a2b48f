#!/usr/bin/env node
/**
 * `keygate`: one executable for the gateway and its registry.
 * Exit status: 0 success, 1 failed operation (message on stderr), 2 bad usage (a
 * command group without its command prints the group's help), 3 a `check` that
 * denies. With `--json`, an error is a JSON object on stderr too.
 */
import { Command, CommanderError } from 'commander'
import { ConfigError, configFile, loadConfig } from '../config/load.js'
import { AdminError } from '../registry/admin/index.js'
import { redisDidNotAnswer } from '../registry/redis-client.js'
import { serve } from '../server.js'
import { VERSION } from '../version.js'
import { parseWorkers } from '../workers.js'
import { assertionKeyCommand } from './assertion-key.js'
import { auditCommand } from './audit.js'
import { checkCommand } from './check.js'
import { RedisUnreachable, UsageError } from './context.js'
import { healthCommand } from './health.js'
import { keysCommand } from './keys.js'
import { migrateCommand } from './migrate.js'
import { orgsCommand } from './orgs.js'
import { printAdminError, printJson } from './output.js'
import { rolesCommand } from './roles.js'
import { usersCommand } from './users.js'

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
  .description('run the gateway: data plane and admin plane (config: KEYGATE_CONFIG or config/keygate.yaml)')
  .option('--workers <n>', 'worker processes sharing the ports, each with its own cache: a number or "auto" (one per core)', '1')
  .action(async (opts: { workers: string }) => {
    let workers: number
    try {
      workers = parseWorkers(opts.workers)
    } catch (err: unknown) {
      throw new UsageError((err as Error).message)
    }
    await serve(loadConfig(), { workers })
  })

program.command('config')
  .description('configuration commands')
  .command('check')
  .description('validate a configuration file; exit 0 when valid, 1 with every problem listed when not')
  .argument('[file]', 'the file to check (default: KEYGATE_CONFIG or config/keygate.yaml)')
  .option('--json', 'print the result as JSON')
  .action((file: string | undefined, opts: { json?: boolean }) => {
    const path = file ?? configFile()
    let config
    try {
      config = loadConfig(path)
    } catch (err: unknown) {
      if (!(err instanceof ConfigError) || opts.json !== true) throw err
      printJson({ ok: false, file: path, problems: err.problems })
      process.exitCode = 1
      return
    }
    if (opts.json === true) printJson({ ok: true, file: path, routes: config.routes.length, rules: config.rules.length })
    else process.stdout.write(`${path}: OK (${config.routes.length} routes, ${config.rules.length} rules)\n`)
  })

keysCommand(program)
usersCommand(program)
rolesCommand(program)
orgsCommand(program)
auditCommand(program)
checkCommand(program)
migrateCommand(program)
healthCommand(program)
assertionKeyCommand(program)

/** The exit status of a failed command, and what is printed for it (nothing: commander printed it already). */
function failure (err: unknown): { code: number, kind: string, message?: string, problems?: string[] } {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return { code: 0, kind: 'help' }
    // a command group without its command: its help, as a usage error
    if (err.code === 'commander.help') return { code: err.exitCode === 0 ? 0 : 2, kind: 'usage', message: 'a command is needed (see the help above)' }
    return { code: 2, kind: 'usage', message: err.message.replace(/^error: /, '') }
  }
  if (err instanceof UsageError) return { code: 2, kind: 'usage', message: err.message }
  if (err instanceof ConfigError) return { code: 1, kind: 'config', message: err.message, problems: err.problems }
  if (err instanceof RedisUnreachable || redisDidNotAnswer(err)) return { code: 1, kind: 'redis', message: 'cannot reach Redis (check KEYGATE_REDIS_URL or redis.url)' }
  return { code: 1, kind: 'failed', message: err instanceof Error ? err.message : String(err) }
}

function exitCodeFor (err: unknown): number {
  // a refused registry write: its reasons (details), as text or as the admin API's error object
  if (err instanceof AdminError) {
    printAdminError(err, json)
    return 1
  }
  const f = failure(err)
  if (f.message === undefined) return f.code
  if (json) {
    const { code, kind, ...rest } = f
    process.stderr.write(JSON.stringify({ error: { kind, ...rest, exit_code: code } }) + '\n')
  } else if (!(err instanceof CommanderError)) {
    // (commander has printed its own message, or the help, already)
    process.stderr.write(`error: ${f.message}\n`)
  }
  return f.code
}

try {
  await program.parseAsync(process.argv)
} catch (err: unknown) {
  process.exitCode = exitCodeFor(err)
}
