/**
 * `keygate config check [file] [--connect]`: the file is valid (exit 0), or every problem is
 * listed (exit 1); with `--connect`, Redis and each upstream origin must answer too
 * (connect-check.ts), one line each, exit 1 when one does not.
 */
import type { Command } from 'commander'
import { ConfigError, configFile, loadConfig } from '../config/load.js'
import type { Config } from '../config/schema.js'
import type { Reached } from './connect-check.js'
import { printJson } from './output.js'

export function configCommand (program: Command): void {
  program.command('config')
    .description('configuration commands')
    .command('check')
    .description(
      'validate a configuration file; exit 0 when valid, 1 with every problem listed when not; ' +
      'with --connect, also reach Redis and every upstream (exit 1 when one does not answer)'
    )
    .argument('[file]', 'the file to check (default: KEYGATE_CONFIG or config/keygate.yaml)')
    .option('--connect', 'also reach Redis (PING) and every upstream origin (GET /: any status answers)')
    .option('--json', 'print the result as JSON')
    .action(async (file: string | undefined, opts: { connect?: boolean, json?: boolean }) => {
      const path = file ?? configFile()
      let config: Config
      try {
        config = loadConfig(path)
      } catch (err: unknown) {
        if (!(err instanceof ConfigError) || opts.json !== true) throw err
        printJson({ ok: false, file: path, problems: err.problems })
        process.exitCode = 1
        return
      }
      // (undici, for the upstreams and the OpenID provider, is loaded only for --connect)
      const reached = opts.connect === true
        ? await (await import('./connect-check.js')).checkConnections(config)
        : undefined
      const ok = reached?.every((r) => r.ok) ?? true
      if (!ok) process.exitCode = 1
      if (opts.json === true) {
        printJson({
          ok,
          file: path,
          routes: config.routes.length,
          rules: config.rules.length,
          ...(reached === undefined ? {} : { connect: reached })
        })
        return
      }
      process.stdout.write(`${path}: OK (${config.routes.length} routes, ${config.rules.length} rules)\n`)
      for (const r of reached ?? []) print(r)
    })
}

function print (r: Reached): void {
  if (r.ok) process.stdout.write(`${r.what} (${r.target}): ok, ${r.detail}\n`)
  else process.stderr.write(`error: ${r.what} (${r.target}): ${r.detail}\n`)
}
