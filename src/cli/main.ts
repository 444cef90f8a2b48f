#!/usr/bin/env node
/**
 * `keygate`: one executable for the gateway and its registry.
 * Exit status: 0 success, 1 failed operation (message on stderr), 2 bad usage.
 */
import { Command, CommanderError } from 'commander'
import { ConfigError, configFile, loadConfig } from '../config/load.js'
import { AdminError } from '../registry/admin/index.js'
import { redisDidNotAnswer } from '../registry/redis-client.js'
import { serve } from '../server.js'
import { parseWorkers } from '../workers.js'
import { assertionKeyCommand } from './assertion-key.js'
import { auditCommand } from './audit.js'
import { checkCommand } from './check.js'
import { UsageError } from './context.js'
import { healthCommand } from './health.js'
import { keysCommand } from './keys.js'
import { migrateCommand } from './migrate.js'
import { orgsCommand } from './orgs.js'
import { printAdminError, printJson } from './output.js'
import { rolesCommand } from './roles.js'
import { usersCommand } from './users.js'

const program = new Command('keygate')
  .description('API-key authentication gateway: Redis registry of keys, users, roles and orgs')
  .showHelpAfterError()
  .exitOverride()

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
    const config = loadConfig(path)
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

function exitCodeFor (err: unknown): number {
  if (err instanceof CommanderError) {
    // commander has printed its message (or the help) already
    return err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version' ? 0 : 2
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`)
    return 2
  }
  if (err instanceof AdminError) {
    printAdminError(err, process.argv.includes('--json'))
    return 1
  }
  if (err instanceof ConfigError) {
    process.stderr.write(`error: ${err.message}\n`)
    return 1
  }
  const message = err instanceof Error ? err.message : String(err)
  process.stderr.write(`error: ${redisDidNotAnswer(err) ? 'cannot reach Redis (check KEYGATE_REDIS_URL or redis.url)' : message}\n`)
  return 1
}

try {
  await program.parseAsync(process.argv)
} catch (err: unknown) {
  process.exitCode = exitCodeFor(err)
}
