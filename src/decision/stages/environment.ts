/**
 * environment: a test key (docs/test-keys.md) is used only on a route with a
 * `test_upstream`, where its requests go instead of the route's upstream: 403
 * `test_key_not_allowed` on any other route (and with no route known: fail closed).
 * First after authentication, so a test key learns nothing of a live route's rules,
 * and nothing is counted. A live key passes with one comparison.
 */
import { challenges } from '../challenges.js'
import type { DecisionStage } from './stage.js'
import { refusal } from '../verdict.js'

export const environment: DecisionStage = {
  name: 'environment',
  answer: '403',
  files: ['src/decision/stages/environment.ts'],
  build: () => (p) => p.identity.env !== 'test' || p.route?.test_upstream !== undefined
    ? undefined
    : refusal(p, 'forbidden', 'test_key_not_allowed', challenges.insufficientScope(undefined))
}
