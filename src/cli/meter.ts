/**
 * `keygate keys meter <keyId>` and `keygate orgs meter <org>` (docs/quotas.md): set or
 * remove a quota (`--quota 100000/month`, `--quota none`), add credits
 * (`--add-credits 5000`); without either, show the allowance as it stands. Admin
 * changes, audited `quota.changed` and `credits.added`.
 */
import { InvalidArgumentError, type Command } from 'commander'
import { CREDITS_HELP, parseQuota, QUOTA_HELP } from '../config/quota.js'
import type { AllowanceView } from '../admin/model/views.js'
import { UsageError, withRegistry } from './context.js'
import { printJson } from './output.js'

/** `--quota 500/day`, or `none` */
export function quotaOrNone (value: string): string {
  if (value !== 'none' && parseQuota(value) === undefined) throw new InvalidArgumentError(`expected ${QUOTA_HELP}`)
  return value
}

/** `--quota 500/day` (creation: no `none`) */
export function quotaArg (value: string): string {
  if (parseQuota(value) === undefined) throw new InvalidArgumentError(`expected ${QUOTA_HELP}`)
  return value
}

/** `--credits 5000`, `--add-credits 5000` */
export function creditsArg (value: string): number {
  if (!/^(0|[1-9][0-9]{0,14})$/.test(value)) throw new InvalidArgumentError(`expected ${CREDITS_HELP}`)
  return Number(value)
}

export interface MeterOpts { quota?: string, addCredits?: number, json?: boolean }

function meterCommand (parent: Command, what: 'key' | 'org'): Command {
  return parent.command('meter')
    .description(`set or remove ${what === 'key' ? 'a key' : 'an org'}'s quota, add credits; ` +
      'without options, show its allowance')
    .argument(what === 'key' ? '<keyId>' : '<org>', what === 'key' ? 'the key id' : 'the org')
    .option('--quota <quota>', `${QUOTA_HELP}; "none" removes it (not given: kept)`, quotaOrNone)
    .option('--add-credits <n>', 'credits granted on top of the balance (at least 1)', creditsArg)
    .option('--json', 'print the result as JSON')
}

export function keyMeterCommand (keys: Command): void {
  meterCommand(keys, 'key').action(async (id: string, opts: MeterOpts) => {
    if (opts.quota === undefined && opts.addCredits === undefined) {
      const view = await withRegistry(({ actions }) => actions.keyQuota(id))
      if (opts.json === true) printJson(view)
      else {
        printAllowance(`key ${id}${view.meter !== id ? ` (continues ${view.meter})` : ''}`, view.key)
        printAllowance(`org ${view.org}`, view.org_allowance)
      }
      return
    }
    const change = changeOf(opts)
    const { changed } = await withRegistry(({ actions }) => actions.meterKey(id, change))
    report(`key ${id}`, opts, changed)
  })
}

export function orgMeterCommand (orgs: Command): void {
  meterCommand(orgs, 'org').action(async (org: string, opts: MeterOpts) => {
    if (opts.quota === undefined && opts.addCredits === undefined) {
      throw new UsageError('give --quota (or --quota none) or --add-credits')
    }
    const change = changeOf(opts)
    const { changed } = await withRegistry(({ actions }) => actions.meterOrg(org, change))
    report(`org ${org}`, opts, changed)
  })
}

export function changeOf (opts: MeterOpts): { quota?: string | null, addCredits?: number } {
  const change: { quota?: string | null, addCredits?: number } = {}
  if (opts.quota !== undefined) change.quota = opts.quota === 'none' ? null : opts.quota
  if (opts.addCredits !== undefined) change.addCredits = opts.addCredits
  return change
}

export function report (what: string, opts: MeterOpts, changed: boolean): void {
  if (opts.json === true) {
    printJson({ changed })
    return
  }
  if (!changed) {
    process.stdout.write(`${what}: unchanged\n`)
    return
  }
  const parts: string[] = []
  if (opts.quota !== undefined) parts.push(opts.quota === 'none' ? 'no quota' : `quota ${opts.quota}`)
  if (opts.addCredits !== undefined) parts.push(`${opts.addCredits} credits added`)
  process.stdout.write(`${what}: ${parts.join(', ')}\n`)
}

export function printAllowance (who: string, v: AllowanceView): void {
  if (v.quota === undefined && v.credits === undefined) {
    process.stdout.write(`${who}: no quota, no credits\n`)
    return
  }
  if (v.quota !== undefined) {
    const q = v.quota
    process.stdout.write(`${who}: quota ${q.quota}: ${q.used} used, ${q.remaining} left, refills ${q.resets_at}\n`)
  }
  if (v.credits !== undefined) {
    const c = v.credits
    process.stdout.write(`${who}: credits ${c.granted} granted, ${c.spent} spent, ${c.remaining} left\n`)
  }
}
