/**
 * `keygate usage <keyId>` or `keygate usage --org <org>`: a key's or an org's request
 * counts (docs/usage.md), one row per step, oldest first: the same range rule and the
 * same read as the admin API's /keys/:id/usage and /orgs/:org/usage.
 */
import { InvalidArgumentError, type Command } from 'commander'
import { STEPS, usageRange, type Step } from '../usage/reader.js'
import { duration, UsageError, withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

function step (value: string): Step {
  if (!(value in STEPS)) throw new InvalidArgumentError('expected 1m, 1h or 1d')
  return value as Step
}

export function usageCommand (program: Command): void {
  program.command('usage')
    .description(
      'print the requests of a key (or of an org with --org) per step: time, allowed, refused, limited, errors'
    )
    .argument('[keyId]', 'the key id (never the whole key)')
    .option('--org <org>', 'the org\'s counts instead of a key\'s')
    .option('--since <duration>', 'how far back, e.g. 24h (default 24h)', duration)
    .option('--step <step>', '1m, 1h (default) or 1d', step)
    .option('--json', 'print the points as JSON')
    .action(async (keyId: string | undefined, opts: { org?: string, since?: number, step?: Step, json?: boolean }) => {
      if ((keyId === undefined) === (opts.org === undefined)) {
        throw new UsageError('give a key id or --org <org>, not both')
      }
      const now = Date.now()
      const s = opts.step ?? '1h'
      const to = Math.ceil((now + 1) / STEPS[s]) * STEPS[s]
      // `--since` counted back from the end of the current step: 48h at 1m is 2,880 points, all that is kept
      const range = usageRange({ from: opts.since === undefined ? undefined : to - opts.since, to, step: s }, now)
      if ('field' in range) throw new UsageError(`--${range.field === 'step' ? 'since' : range.field}: ${range.reason}`)
      const { env, points } = await withRegistry(async ({ actions }) => keyId !== undefined
        ? await actions.keyUsage(keyId, range)
        : { env: undefined, points: await actions.orgUsage(opts.org as string, range) })
      if (opts.json === true) {
        printJson(env === undefined ? { points } : { env, points })
        return
      }
      // (a key's environment first: a test key's requests reach only test upstreams)
      if (env !== undefined) process.stdout.write(`key ${keyId as string} (${env})\n`)
      printTable(points, ['t', 'allowed', 'refused', 'limited', 'errors'])
    })
}
