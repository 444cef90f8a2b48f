/**
 * `keygate webhooks add|list|remove|test|deliveries|resend` (docs/webhooks.md): endpoints
 * signed events are sent to, through the admin actions like every other front end.
 */
import { type Command, InvalidArgumentError } from 'commander'
import { EVENT_TYPES } from '../webhooks/events.js'
import { withRegistry } from './context.js'
import { printJson, printTable } from './output.js'

function events (value: string): string[] {
  const list = value.split(',').map((e) => e.trim()).filter((e) => e !== '')
  const unknown = list.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e))
  if (list.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(`events are a comma-separated list of ${EVENT_TYPES.join(', ')}`)
  }
  return list
}

export function webhooksCommand (program: Command): void {
  const hooks = program.command('webhooks').description('manage webhook endpoints: signed events sent as they happen')

  hooks.command('add')
    .description('add an endpoint; its signing secret is printed once')
    .argument('<url>', 'http:// or https:// URL; a private or loopback target is refused unless webhooks.allow_private_targets')
    .requiredOption('--events <list>', `comma-separated: ${EVENT_TYPES.join(', ')}`, events)
    .option('--org <org>', 'only this org\'s events')
    .option('--description <text>', 'a note shown in listings')
    .option('--json', 'print the result as JSON')
    .action(async (url: string, opts: { events: string[], org?: string, description?: string, json?: boolean }) => {
      const created = await withRegistry(({ actions }) => actions.addWebhook({
        url, events: opts.events, org: opts.org, description: opts.description
      }))
      if (opts.json === true) printJson(created)
      else {
        process.stdout.write(`webhook ${created.id}: ${created.url} (${created.events.join(', ')})\n`)
        process.stdout.write(`secret (shown once, verify signatures with it): ${created.secret}\n`)
      }
    })

  hooks.command('list')
    .description('list endpoints (never their secrets)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const list = await withRegistry(({ actions }) => actions.listWebhooks())
      if (opts.json === true) printJson(list)
      else {
        const rows = list.map((w) => ({ ...w, events: w.events.join(',') }))
        printTable(rows, ['id', 'url', 'events', 'org', 'created_at'])
      }
    })

  hooks.command('remove')
    .description('remove an endpoint; its pending deliveries are dropped')
    .argument('<id>', 'the endpoint id (wh_...)')
    .action(async (id: string) => {
      await withRegistry(({ actions }) => actions.removeWebhook(id))
      process.stdout.write(`webhook ${id} removed\n`)
    })

  hooks.command('test')
    .description('send a webhook.test event to the endpoint')
    .argument('<id>', 'the endpoint id (wh_...)')
    .action(async (id: string) => {
      const { delivery } = await withRegistry(({ actions }) => actions.testWebhook(id))
      process.stdout.write(`queued: delivery ${delivery} (see keygate webhooks deliveries ${id})\n`)
    })

  hooks.command('deliveries')
    .description('an endpoint\'s last deliveries, newest first: outcome, HTTP status, latency')
    .argument('<id>', 'the endpoint id (wh_...)')
    .option('--limit <n>', 'how many', (v) => Number(v), 50)
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { limit: number, json?: boolean }) => {
      const limit = Math.min(1000, Math.max(1, opts.limit))
      const list = await withRegistry(({ actions }) => actions.webhookDeliveries(id, limit))
      if (opts.json === true) printJson(list)
      else printTable(list, ['id', 'type', 'status', 'attempts', 'last_status', 'latency_ms', 'last_error'])
    })

  hooks.command('resend')
    .description('send a delivery again')
    .argument('<id>', 'the endpoint id (wh_...)')
    .argument('<delivery>', 'the delivery id')
    .action(async (id: string, delivery: string) => {
      await withRegistry(({ actions }) => actions.resendDelivery(id, delivery))
      process.stdout.write(`delivery ${delivery} queued again\n`)
    })
}
