/**
 * `keygate keys restrict <keyId>`: a key's scope and the addresses it may be used from,
 * live, or (`--shadow`) tried on its requests without being enforced, then made live
 * (`--promote`) or dropped (`--drop-shadow`): docs/key-scopes.md, docs/safe-change.md.
 */
import type { Command } from 'commander'
import { UsageError, withRegistry } from './context.js'
import { printJson } from './output.js'

/** what `none` parses to (commander keeps no null an option parser returns) */
export const NONE = 'none'

/** `--scope "users:read orders:read"`: the permissions, space-separated; `none` (restrict only): remove it */
export function scopeList (value: string): string[] | typeof NONE {
  if (value.trim() === NONE) return NONE
  const list = value.split(/\s+/).filter((p) => p !== '')
  if (list.length === 0) {
    throw new UsageError('--scope takes permissions, space-separated, e.g. "users:read orders:read" (or none)')
  }
  return list
}

/**
 * `--allow-cidr X` (repeatable; several space- or comma-separated in one also work); `none` (restrict only): remove
 * them
 */
export function cidrList (value: string, previous: string[] | typeof NONE | undefined): string[] | typeof NONE {
  if (value.trim() === NONE) {
    if (previous !== undefined) throw new UsageError('--allow-cidr none removes the addresses: give it alone')
    return NONE
  }
  if (previous === NONE) throw new UsageError('--allow-cidr none removes the addresses: give it alone')
  return [...previous ?? [], ...value.split(/[\s,]+/).filter((c) => c !== '')]
}

/** a flag's list, `none` as null (remove), absent as undefined (keep) */
export function listOrNull (value: string[] | typeof NONE | undefined): string[] | null | undefined {
  return value === NONE ? null : value
}

interface RestrictOptions {
  scope?: string[] | typeof NONE
  allowCidr?: string[] | typeof NONE
  shadow?: boolean
  promote?: boolean
  dropShadow?: boolean
  json?: boolean
}

export function keyRestrictCommand (keys: Command): void {
  keys.command('restrict')
    .description(
      "set or remove a key's scope and the addresses it may be used from; every gateway applies it within a second. " +
      'With --shadow, the restriction is tried on the key\'s requests and never enforced (keys show counts what it ' +
      'would refuse); --promote makes it live, --drop-shadow drops it'
    )
    .argument('<keyId>', 'the key id')
    .option(
      '--scope <permissions>',
      'the permissions, space-separated (within its role\'s); "none" removes the scope',
      scopeList
    )
    .option('--allow-cidr <cidr>', 'an address range the key works from (repeatable); "none" removes them', cidrList)
    .option('--shadow', 'record the restriction as a shadow: counted, never enforced')
    .option('--promote', 'make the key\'s shadow restriction its live restriction')
    .option('--drop-shadow', 'drop the key\'s shadow restriction (the live one stays)')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: RestrictOptions) => {
      const given = opts.scope !== undefined || opts.allowCidr !== undefined
      if (opts.promote === true || opts.dropShadow === true) {
        if (given || opts.shadow === true || (opts.promote === true && opts.dropShadow === true)) {
          throw new UsageError('--promote and --drop-shadow take no other option')
        }
        await withRegistry(({ actions }) => opts.promote === true
          ? actions.promoteShadowRestriction(id)
          : actions.dropShadowRestriction(id))
        await printRestriction(id, true, opts.json === true)
        return
      }
      if (!given) throw new UsageError('give --scope and/or --allow-cidr (or "none" to remove one)')
      const change = { scope: listOrNull(opts.scope), allowedCidrs: listOrNull(opts.allowCidr) }
      let changed = true
      if (opts.shadow === true) await withRegistry(({ actions }) => actions.shadowRestrictKey(id, change))
      else ({ changed } = await withRegistry(({ actions }) => actions.restrictKey(id, change)))
      await printRestriction(id, changed, opts.json === true)
    })
}

/** The key's live restriction, and its shadow one if it has one. */
async function printRestriction (id: string, changed: boolean, json: boolean): Promise<void> {
  const k = await withRegistry(({ actions }) => actions.showKey(id))
  const shadow = k.shadow_since === undefined
    ? null
    : { scope: k.shadow_scope ?? null, allowed_cidrs: k.shadow_allowed_cidrs ?? null, since: k.shadow_since }
  if (json) {
    // (the shadow restriction only when the key has one: a live restriction's answer stays as it was)
    const live = { id, scope: k.scope ?? null, allowed_cidrs: k.allowed_cidrs ?? null }
    printJson({ ...live, ...(shadow === null ? {} : { shadow }), changed })
    return
  }
  process.stdout.write(
    `key ${id}: scope ${k.scope?.join(' ') ?? '(all of its role)'}; ` +
    `addresses ${k.allowed_cidrs?.join(' ') ?? '(any)'}${changed ? '' : ' (unchanged)'}\n`
  )
  if (shadow !== null) {
    process.stdout.write(
      `  shadow (tried, not enforced): scope ${shadow.scope?.join(' ') ?? '(all of its role)'}; ` +
      `addresses ${shadow.allowed_cidrs?.join(' ') ?? '(any)'}\n`
    )
  }
}
