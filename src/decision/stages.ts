/**
 * The stages a request meets, in order, named: the one list that the source headers,
 * docs/request-flow.md ("How a request flows") (checked against it by test/unit/decision/stages.test.ts)
 * and the log's reasons follow. `decision` marks the stages of the one decision function
 * (decide-request.ts) that every front end calls; `authentication` those of the
 * authentication inside it (authenticate-request.ts), which the admin sign-in calls alone.
 * The stages after authentication are the list the decision runs (stages/index.ts).
 */
import { DECISION_STAGES } from './stages/index.js'

export interface Stage {
  readonly name: string
  /** what a refusal at this stage answers (status codes), or what the stage does */
  readonly answer: string
  /** where it is, from src/ */
  readonly files: readonly string[]
  readonly decision: boolean
  readonly authentication: boolean
}

type Part = 'decision' | 'authentication' | 'front end'

function stage (name: string, answer: string, files: readonly string[], part: Part): Stage {
  const decision = part !== 'front end'
  return Object.freeze({
    name,
    answer,
    files: Object.freeze(files),
    decision,
    authentication: part === 'authentication'
  })
}

export const STAGES: readonly Stage[] = Object.freeze([
  stage('receive', '400/417/431', ['src/http/framing.ts', 'src/decision/target-policy.ts'], 'decision'),
  stage('route prefix', '404', ['src/decision/route-table.ts'], 'decision'),
  stage('credential', '401', ['src/decision/extract-credential.ts'], 'authentication'),
  stage('key format', '401 (local)', ['src/registry/key-format.ts'], 'authentication'),
  stage('records', '503', ['src/cache/resolve-identity.ts'], 'authentication'),
  stage('authenticate', '401', ['src/decision/decide.ts'], 'authentication'),
  ...DECISION_STAGES.map((s) => stage(s.name, s.answer, s.files, 'decision')),
  stage('body', '413/408', ['src/data-plane/body-limit.ts'], 'front end'),
  stage('headers', 'strip+set', ['src/http/identity-headers.ts'], 'front end'),
  stage('proxy', '502/504', ['src/data-plane/proxy.ts'], 'front end'),
  stage('log', '', ['src/http/request-log.ts'], 'front end')
])
