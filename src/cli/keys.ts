/**
 * `keygate keys ...`: create (shown once), list, show, revoke, rotate, restrict, limit, leaked, import, requests.
 * Never a secret or a hash.
 */
import { metaArg } from './identities.js'
import { Option, type Command } from 'commander'
import { keyOwnerProblem, type KeyOwnerFields } from '../admin/actions/index.js'
import { DEFAULT_GRACE_MS } from '../admin/model/limits.js'
import type { CreatedKey, KeyView } from '../admin/model/views.js'
import { creditsArg, keyMeterCommand, quotaArg } from './meter.js'
import { duration, limitOrNull, rateLimit, rateLimitOrNone, UsageError, withRegistry } from './context.js'
import { keyImportCommands } from './key-imports.js'
import { cidrList, keyRestrictCommand, listOrNull, NONE, scopeList } from './key-restrict.js'
import { keyRequestsCommand } from './key-requests.js'
import { printJson, printTable, printWarnings } from './output.js'

const KEY_COLUMNS = [
  'id',
  'type',
  'owner',
  'org',
  'name',
  'status',
  'created_at',
  'expires_at',
  'last_used_at',
  'env',
  'rate_limit',
  'scope',
  'allowed_cidrs'
]

function owner (k: KeyView): string {
  return k.type === 'personal' ? `user:${k.user ?? '?'}` : `role:${k.role ?? '?'}`
}

function printCreated (created: CreatedKey, extra = ''): void {
  process.stdout.write(
    `Created ${created.env === 'test' ? 'test ' : ''}${created.type} key ${created.id} (org ${created.org}, ` +
    `${created.user !== undefined ? `user ${created.user}` : `role ${created.role ?? ''}`})\n\n` +
    `  ${created.key}\n\n` +
    'Copy it now: it is shown only this once and cannot be recovered (only its hash is stored).\n' +
    (created.expires_at !== undefined ? `It expires at ${created.expires_at}.\n` : '') + extra
  )
}

/** The policy's owner fields, checked before connecting: a breach is a usage error, told in flags. */
const OWNER_FLAGS = {
  personal: 'a personal key takes --user <userId> (its org and role come from the user), not --role or --org',
  bot: 'a BOT key takes --role <role> and --org <org>, not --user'
} as const

function checkOwnerFlags (r: KeyOwnerFields): void {
  if (keyOwnerProblem(r) !== undefined) throw new UsageError(OWNER_FLAGS[r.type])
}

export function keysCommand (program: Command): void {
  const keys = program.command('keys').description('manage API keys')

  keys.command('create')
    .description('create a key; the key is printed once and cannot be shown again')
    .addOption(new Option(
      '--type <type>',
      'personal (acts as its user) or bot (acts with its own role)'
    ).choices(['personal', 'bot']).makeOptionMandatory())
    .option('--user <userId>', 'personal keys: the owning user (must exist and be active)')
    .option('--role <role>', 'BOT keys: the role the key acts with (must exist)')
    .option('--org <org>', 'BOT keys: the organisation')
    .option('--name <name>', 'a label for the key')
    .option('--expires-in <duration>', 'e.g. 30s, 24h, 90d (default: never)', duration)
    .option(
      '--created-by <userId>',
      'the user the key is recorded as created by (user:<userId>; their BOT keys are listed under them)'
    )
    .option(
      '--rate-limit <limit>',
      "the key's own rate limit, e.g. 100/1s or 5000/1h (default: rate_limits.default; " +
      "its role's and org's limits apply too)",
      rateLimit
    )
    .option('--quota <quota>', 'the key\'s allowance per UTC day, week or month, e.g. 100000/month', quotaArg)
    .option('--credits <n>', 'a balance of units its requests spend, e.g. 5000', creditsArg)
    .option(
      '--scope <permissions>',
      'narrow the key to these permissions, space-separated, e.g. "users:read" (default: all of its role\'s)',
      scopeList
    )
    .option(
      '--allow-cidr <cidr>',
      'the key works only from this client address range, e.g. 10.0.0.0/8 or 2001:db8::/32 (repeatable)',
      cidrList
    )
    .addOption(new Option(
      '--env <env>',
      'test: a test key (keys.test_prefix), whose requests reach only a route\'s test_upstream (default: live)'
    ).choices(['live', 'test']))
    .option('--identity <id>', 'BOT keys: the identity whose limits, allowance and meta the key shares')
    .option('--meta <json>', 'a JSON object of at most 1 KB, sent upstream as X-Auth-Meta', metaArg)
    .option('--json', 'print the result as JSON')
    .action(async (opts: {
      type: 'personal' | 'bot',
      identity?: string,
      meta?: Record<string, unknown> | null,
      env?: 'live' | 'test',
      user?: string,
      role?: string,
      org?: string,
      name?: string,
      expiresIn?: number,
      createdBy?: string,
      rateLimit?: string,
      quota?: string,
      credits?: number,
      scope?: string[] | typeof NONE,
      allowCidr?: string[] | typeof NONE,
      json?: boolean
    }) => {
      checkOwnerFlags(opts)
      const scope = listOrNull(opts.scope)
      const allowedCidrs = listOrNull(opts.allowCidr)
      if (scope === null || allowedCidrs === null) {
        throw new UsageError('a new key has no scope or addresses to remove: leave out --scope / --allow-cidr')
      }
      const { result: created, warnings } = await withRegistry(async ({ actions }) => await actions.createKey({
        type: opts.type,
        user: opts.user,
        role: opts.role,
        org: opts.org,
        name: opts.name,
        expiresInMs: opts.expiresIn,
        createdBy: opts.createdBy,
        rateLimit: opts.rateLimit,
        quota: opts.quota,
        credits: opts.credits,
        scope,
        allowedCidrs,
        env: opts.env,
        identity: opts.identity,
        meta: opts.meta ?? undefined
      }))
      printWarnings(warnings)
      if (opts.json === true) printJson(created)
      else printCreated(created)
    })

  keys.command('list')
    .description('list keys (by user, by org, or all) with status, expiry and last use')
    .option('--user <userId>', 'keys of this user (personal keys, and BOT keys created by them)')
    .option('--org <org>', 'keys in this org')
    .option('--unused-for <duration>', 'only keys not used (nor created) within this long, e.g. 90d', duration)
    .option('--over-policy', "with --org: only the active keys that outlive the org's key_max_ttl")
    .option('--search <text>', 'only keys whose name, key id, user or role contains this text (any case)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: {
      user?: string, org?: string, unusedFor?: number, overPolicy?: boolean, search?: string, json?: boolean
    }) => {
      if (opts.overPolicy === true && opts.org === undefined) throw new UsageError('--over-policy needs --org <org>')
      if (opts.overPolicy === true && opts.search !== undefined) {
        throw new UsageError('--over-policy lists every such key: leave out --search')
      }
      const list = await withRegistry(async ({ actions }) => opts.overPolicy === true
        ? await actions.keysOverPolicy({ org: opts.org as string })
        : await actions.listKeys({ user: opts.user, org: opts.org, unusedForMs: opts.unusedFor, q: opts.search }))
      if (opts.json === true) printJson(list)
      else printTable(list.map((k) => ({ ...k, owner: owner(k) })), KEY_COLUMNS)
    })

  keys.command('show')
    .description('show one key (never its secret or hash)')
    .argument('<keyId>', 'the key id (the part after the prefix, as logs and headers show it)')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const k = await withRegistry(({ actions }) => actions.showKey(id))
      if (opts.json === true) {
        printJson(k)
        return
      }
      const { shadow_recent: recent, ...shown } = k
      for (const [field, value] of Object.entries({ ...shown, owner: owner(k) })) {
        process.stdout.write(`${field.padEnd(13)} ${shownValue(value)}\n`)
      }
      // what the shadow restriction would have refused, newest first (never a query string or a header)
      for (const e of recent ?? []) process.stdout.write(`  would refuse ${e.at} ${e.method} ${e.path} ${e.reason}\n`)
    })

  keys.command('revoke')
    .description('revoke a key: every gateway refuses it within moments')
    .argument('<keyId>', 'the key id')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { changed } = await withRegistry(({ actions }) => actions.revokeKey(id))
      if (opts.json === true) printJson({ id, status: 'revoked', changed })
      else process.stdout.write(changed ? `key ${id} revoked\n` : `key ${id} was already revoked\n`)
    })

  keyImportCommands(keys)
  keyRequestsCommand(keys)

  keys.command('limit')
    .description("set or remove a key's own rate limit; every gateway applies it within a second")
    .argument('<keyId>', 'the key id')
    .requiredOption(
      '--rate-limit <limit>',
      'e.g. 100/1s, 5000/1h; "none" removes it (then rate_limits.default applies)',
      rateLimitOrNone
    )
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { rateLimit: string, json?: boolean }) => {
      const limit = limitOrNull(opts.rateLimit) ?? null
      const { changed } = await withRegistry(({ actions }) => actions.setKeyLimit(id, limit))
      if (opts.json === true) printJson({ id, rate_limit: limit, changed })
      else {
        process.stdout.write(
          limit === null ? `key ${id}: no rate limit of its own\n` : `key ${id}: rate limit ${limit}\n`
        )
      }
    })

  keyMeterCommand(keys)

  keyRestrictCommand(keys)

  keys.command('rotate')
    .description(
      'create a replacement key (same type, owner, role, org, name, rate limit, ' +
      'scope, addresses); the old key works until the grace period ends'
    )
    .argument('<keyId>', 'the key to replace')
    .addOption(new Option(
      '--grace <duration>',
      'how long the old key keeps working, e.g. 1h'
    ).argParser(duration).default(DEFAULT_GRACE_MS, '24h'))
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { grace: number, json?: boolean }) => {
      const rotated = await withRegistry(({ actions }) => actions.rotateKey(id, opts.grace))
      if (opts.json === true) printJson(rotated)
      else {
        printCreated(
          rotated,
        `It replaces ${rotated.replaces}, which stops working at ${rotated.replaces_expires_at}.\n`
        )
      }
    })
}

/** A field of `keys show`: a list space-separated, `meta` as its JSON text (the admin's own data, shown to admins). */
function shownValue (value: unknown): string {
  if (value === '' || value === undefined) return '-'
  if (Array.isArray(value)) return value.join(' ')
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)
}
