/**
 * authorize: the route rule (match-rule.ts) and what it asks of the identity: default
 * deny (no rule: 403 `no_rule`), the org constraint, the permissions (the effective
 * role's, narrowed by the key's scope). The rule that matched goes on the verdict.
 */
import { challenges } from '../challenges.js'
import type { Identity } from '../identity.js'
import type { Grants } from '../../registry/records.js'
import type { CompiledRule, RuleMatch } from '../match-rule.js'
import type { DecisionStage } from './stage.js'
import { refusal } from '../verdict.js'

export type Authorized =
  | { ok: true }
  | { ok: false, reason: 'no_rule' | 'org_mismatch' }
  | { ok: false, reason: 'missing_permission', scope: string }

const AUTHORIZED: Authorized = Object.freeze({ ok: true })

export function authorize (identity: Identity, match: RuleMatch | null): Authorized {
  if (match === null) return { ok: false, reason: 'no_rule' }
  const { rule, params } = match
  if (rule.orgParam !== undefined && params[rule.orgParam] !== identity.org) {
    return { ok: false, reason: 'org_mismatch' }
  }
  if (!permitted(identity.grants, rule)) return { ok: false, reason: 'missing_permission', scope: rule.scope }
  return AUTHORIZED
}

/** The permissions a rule asks for, granted (the key's scope, live or shadow: shadow-restriction.ts) */
export function permitted (grants: Grants, rule: CompiledRule): boolean {
  return grants.hasAll(rule.permissions)
}

export const authorizeStage: DecisionStage = {
  name: 'authorize',
  answer: '403',
  files: ['src/decision/match-rule.ts', 'src/decision/stages/authorize.ts'],
  build: ({ matchRule }) => (p, method, path) => {
    const match = matchRule(method, path)
    if (match !== null) p.rule = match.rule
    const may = authorize(p.identity, match)
    if (may.ok) return undefined
    return refusal(
      p,
      'forbidden',
      may.reason,
      challenges.insufficientScope(may.reason === 'missing_permission' ? may.scope : undefined)
    )
  }
}
