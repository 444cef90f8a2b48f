/**
 * `keygate keys requests <keyId>`: the key's last decisions, newest first (time, method,
 * path without query, status, reason, latency, client, trace id), the admin API's
 * /keys/:id/requests read (docs/request-log.md).
 */
import { InvalidArgumentError, type Command } from 'commander'
import { withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

function count (value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new InvalidArgumentError('expected a whole number, 1 to 10000')
  return n
}

function status (value: string): string {
  if (!/^[1-5]([0-9]{2}|xx)$/.test(value)) throw new InvalidArgumentError('expected a status (429) or a class (4xx)')
  return value
}

export function keyRequestsCommand (keys: Command): void {
  keys.command('requests')
    .description('print a key\'s last decisions, newest first (kept 24 h): never a query string, header or body')
    .argument('<keyId>', 'the key id (never the whole key)')
    .option('--limit <n>', 'at most this many (default 100)', count)
    .option('--status <status>', 'only this status (429) or class (4xx)', status)
    .option('--json', 'print the decisions as JSON')
    .action(async (id: string, opts: { limit?: number, status?: string, json?: boolean }) => {
      const q = { limit: opts.limit ?? 100, status: opts.status }
      const requests = await withRegistry(({ actions }) => actions.keyRequests(id, q))
      if (opts.json === true) printJson({ requests })
      else printTable(requests, ['time', 'method', 'path', 'status', 'reason', 'latency_ms', 'client', 'trace_id'])
    })
}
