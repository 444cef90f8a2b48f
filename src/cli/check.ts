/**
 * `keygate check <METHOD> <path>`: the decision the gateway would take, explained.
 * The key comes from KEYGATE_KEY or stdin, never from argv (which lands in shell
 * history and process listings). Exit status 0 on allow, 3 on deny.
 */
import { isIP } from 'node:net'
import type { Command } from 'commander'
import { explain, type Explanation } from './explain.js'
import { RedisUnreachable, UsageError, withRegistry } from './context.js'
import { printJson } from './output.js'

async function readKey (): Promise<string> {
  const fromEnv = process.env.KEYGATE_KEY
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv.trim()
  if (process.stdin.isTTY) process.stderr.write('key (input is not echoed to history; end with Enter, then Ctrl-D): ')
  let text = ''
  for await (const chunk of process.stdin) text += String(chunk)
  const key = text.trim()
  if (key === '') throw new UsageError('no key: set KEYGATE_KEY, or pipe the key on stdin')
  return key
}

function clientIp (value: string): string {
  if (isIP(value) === 0) throw new UsageError(`--from takes an IPv4 or IPv6 address, not "${value.slice(0, 64)}"`)
  return value
}

/** What the shadow rules would answer, beside the live decision above it. */
function shadowLine (s: Explanation['shadow']): string {
  if (s === undefined) return 'no shadow rules apply (none configured, or no key reached the rules)'
  if (s.agrees) return 'the shadow rules answer the same'
  const rule = s.rule === 'none' ? 'no shadow rule matches' : `shadow rule #${s.rule}`
  return `live ${s.live}, shadow ${s.shadow} (${rule}); the live answer is the one given`
}

function printHuman (e: Explanation, shadow: boolean): void {
  const verdict = e.allowed ? 'ALLOW -> forwarded upstream' : `DENY ${String(e.status)} ${e.code ?? ''}`
  const lines = [`${verdict}  (reason: ${e.reason})`, `  request   ${e.method} ${e.path ?? '(refused target)'}`]
  if (e.route !== undefined) {
    const r = e.route
    const hosts = r.hosts === undefined ? '' : ` (hosts ${r.hosts.join(' ')})`
    const forwarded = r.forwarded_path === undefined ? '' : `, forwarded as ${r.forwarded_path}`
    lines.push(`  route     ${r.prefix}${hosts} -> upstream ${r.upstream}${forwarded}` +
      `${r.key_header === undefined ? '' : `; key also in ${r.key_header}`}`)
  }
  if (e.key_id !== undefined) {
    lines.push(`  key       ${e.key_id}${e.key_type !== undefined
      ? ` (${e.key_type}${e.user_id !== undefined ? `, user ${e.user_id}` : ''}, org ${e.org ?? '?'})`
      : ''}`)
  }
  if (e.role !== undefined) {
    lines.push(`  role      ${e.role}: ${(e.role_permissions ?? e.permissions)?.join(' ') ?? ''}`.trimEnd())
  }
  if (e.scope !== undefined) lines.push(`  scope     ${e.scope.join(' ')}`)
  if (e.role !== undefined) lines.push(`  effective ${e.permissions?.join(' ') || '(nothing)'}`)
  if (e.allowed_cidrs !== undefined) {
    lines.push(`  addresses ${e.allowed_cidrs.join(' ')} (from ${e.from ?? 'no address: give --from <ip>'})`)
  }
  if (e.refused_by !== undefined) lines.push(`  refused   by the ${e.refused_by.join(' and the ')}`)
  if (e.rule?.public === true) {
    lines.push(`  rule      #${e.rule.index} ${e.rule.method} ${e.rule.path} is public (no key needed)`)
  } else if (e.rule !== undefined) {
    lines.push(`  rule      #${e.rule.index} ${e.rule.method} ${e.rule.path} requires ` +
      `${e.rule.permissions.join(' ') || '(nothing)'}` +
      `${e.rule.org_param !== undefined ? `, org_param ${e.rule.org_param}` : ''}`)
  } else if (e.reason === 'no_rule') lines.push('  rule      none matches (default deny)')
  if (e.rate_limits !== undefined) {
    lines.push(`  limits    ${Object.entries(e.rate_limits).map(([level, limit]) => `${level} ${limit}`).join(', ')} ` +
      '(the strictest decides; not counted by a check)')
  }
  if (e.quota !== undefined) {
    const refused = e.code === 'quota_exceeded' ? 'refused by the quota: ' : ''
    lines.push(`  quota     ${refused}${e.quota.map((q) => `${q.name} ${q.remaining} of ${q.limit} left` +
      `${q.reset_s === undefined ? '' : ` (refills in ${q.reset_s} s)`}`).join(', ')} (not spent by a check)`)
  }
  if (e.headers !== undefined) {
    for (const [name, value] of Object.entries(e.headers)) lines.push(`  header    ${name}: ${value}`)
  }
  if (shadow) lines.push(`  shadow    ${shadowLine(e.shadow)}`)
  process.stdout.write(lines.join('\n') + '\n')
}

/** The exit status of a `check` that denies (1 stays an error, 2 a bad usage). */
export const EXIT_DENIED = 3

export function checkCommand (program: Command): void {
  program.command('check')
    .description('explain the decision the gateway would take for a request (key from KEYGATE_KEY or stdin)')
    .argument('<method>', 'HTTP method, e.g. GET')
    .argument('<path>', 'request path, e.g. /api/v1/users')
    .option('--from <ip>', 'the client address to decide for (a key bound to addresses needs one)', clientIp)
    .option('--host <name>', 'the Host header to decide for (routes with hosts)')
    .option('--anonymous', 'decide a request without a key (a public rule\'s); no key is read')
    .option('--shadow', 'show what the shadow rules (shadow_rules) would answer beside the live decision')
    .option('--json', 'print the result as JSON')
    .action(async (method: string, path: string,
      opts: { json?: boolean, from?: string, host?: string, anonymous?: boolean, shadow?: boolean }) => {
      const key = opts.anonymous === true ? undefined : await readKey()
      const explanation = await withRegistry(async ({ config, redis }) =>
        await explain(config, redis, method.toUpperCase(), path, key, opts.from, opts.host))
      // the gateway would answer 503; the check itself could not decide
      if (explanation.reason === 'registry_unavailable' || explanation.reason === 'registry_busy') {
        throw new RedisUnreachable(explanation.reason)
      }
      if (opts.shadow !== true) delete explanation.shadow
      if (opts.json === true) printJson(explanation)
      else printHuman(explanation, opts.shadow === true)
      // a script (a CI step) can gate on the answer: 0 allow, 3 deny
      if (!explanation.allowed) process.exitCode = EXIT_DENIED
    })
}
