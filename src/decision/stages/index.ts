/**
 * The stages after authentication, in the order the decision runs them
 * (decide-request.ts): a new check is a file beside these and a line here. STAGES
 * (../stages.ts) and docs/request-flow.md ("How a request flows") follow this list.
 */
import { address } from './address.js'
import { authorizeStage } from './authorize.js'
import { environment } from './environment.js'
import { rateLimits } from './rate-limits.js'
import { quota } from './quota.js'
import type { DecisionStage } from './stage.js'

export const DECISION_STAGES: readonly DecisionStage[] = Object.freeze([
  environment,
  address,
  authorizeStage,
  rateLimits,
  quota
])
