/**
 * A stage after authentication: one file under stages/, one line in the list
 * (index.ts). Every stage has the same shape: built once from the decision's parts,
 * then called per request with the request so far.
 *
 * A check returns undefined to let the request on to the next stage, or a refusal,
 * which ends the decision. It is synchronous when it can be (the cached path creates
 * no promise); a promise when it waits on something (Redis), after which the stages
 * that follow run with the time of its answer. A stage that lets a request through
 * may set what it found on the verdict being made (the rule, the rate limit's values).
 */
import type { Limiter } from '../../ratelimit/limiter.js'
import type { QuotaMeter } from '../../quota/meter.js'
import type { RuleMatcher } from '../match-rule.js'
import type { Passing, Refused } from '../verdict.js'

export type StageResult = Refused | undefined | Promise<Refused | undefined>

/** `client`: the client's address as the trusted proxies allow (decide-request.ts); `now`: epoch ms */
export type StageCheck = (
  p: Passing,
  method: string,
  path: string,
  client: string | undefined,
  now: number
) => StageResult

/** What stages are built from, once per decider (factory.ts). */
export interface StageParts {
  matchRule: RuleMatcher
  /** the rate limits (src/ratelimit/); without one, none apply */
  limiter: Limiter | undefined
  /** quotas and credits (src/quota/); without a meter, none apply */
  quota?: QuotaMeter | undefined
}

export interface DecisionStage {
  /** the stage's name in STAGES (stages.ts), the README's flow and the source headers */
  readonly name: string
  /** what a refusal at this stage answers (status codes) */
  readonly answer: string
  /** where it is, from the repository's root */
  readonly files: readonly string[]
  readonly build: (parts: StageParts) => StageCheck
}
