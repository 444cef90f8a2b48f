/**
 * `keygate audit`: the trail of admin changes made through keygate (not direct
 * redis-cli edits), oldest first (`--newest-first` for `| head`); `--refused`: the refused attempts, counted per
 * principal, action, org and minute.
 */
import { InvalidArgumentError, type Command } from 'commander'
import type { AuditPage, AuditQuery } from '../admin/actions/index.js'
import { duration, withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

/** commander argument parser for --limit */
function count (value: string): number {
  if (!/^[1-9][0-9]{0,6}$/.test(value)) throw new InvalidArgumentError('expected a whole number above zero')
  return Number(value)
}

export function auditCommand (program: Command): void {
  program.command('audit')
    .description(
      'print the audit trail, oldest first (--newest-first to reverse): time, actor, ' +
      'action, target, org, result (changes made directly in Redis are not in it)'
    )
    .option('--since <duration>', 'only entries newer than this, e.g. 24h', duration)
    .option('--limit <n>', 'only the newest n entries', count)
    .option('--newest-first', 'print the newest entry first (e.g. for keygate audit | head)')
    .option('--refused', 'the refused attempts instead: one line per principal, action, org and minute, with a count')
    .option('--json', 'print the result as JSON')
    .action(async (opts: {
      since?: number, limit?: number, newestFirst?: boolean, refused?: boolean, json?: boolean
    }) => {
      const inOrder = <T>(oldestFirst: T[]): T[] => opts.newestFirst === true ? oldestFirst.reverse() : oldestFirst
      if (opts.refused === true) {
        const rows = inOrder(await withRegistry(({ actions }) => newest((q) => actions.readRefusals(q), opts)))
        if (opts.json === true) printJson(rows)
        else {
          printTable(
            rows.map((r) => ({ ...r, last_target: r.last.target, last_result: r.last.result })),
            ['minute', 'actor', 'action', 'org', 'count', 'last_target', 'last_result']
          )
        }
        return
      }
      const entries = inOrder(await withRegistry(({ actions }) => opts.limit === undefined
        ? actions.readAudit(opts.since)
        : newest(
          (q) => actions.pageAudit(q),
          opts
        )))
      if (opts.json === true) printJson(entries)
      else printTable(entries, ['time', 'actor', 'action', 'target', 'org', 'result'])
    })
}

/** Pages through newest first, up to `limit` entries (all without it); returns them oldest first. */
async function newest<T> (
  read: (q: AuditQuery) => Promise<AuditPage<T>>,
  opts: { since?: number, limit?: number }
): Promise<T[]> {
  const out: T[] = []
  let cursor: string | undefined
  do {
    const want = Math.min(1000, (opts.limit ?? Number.POSITIVE_INFINITY) - out.length)
    const page = await read({ limit: want, cursor, sinceMs: opts.since })
    out.push(...page.entries)
    cursor = page.next_cursor
  } while (cursor !== undefined && out.length < (opts.limit ?? Number.POSITIVE_INFINITY))
  return out.reverse()
}
