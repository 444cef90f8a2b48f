/**
 * Responses to requests and to decision requests: counted by mode (`proxy`: the data
 * plane; `authz`: the authorizer listener; `websocket`: the data plane's WebSocket
 * upgrades), rule, status, status class and reason, timed by mode, rule, status and
 * status class: one status scheme on both, so either label selects alike in each.
 */
import { REASONS, type Reason } from '../errors.js'
import type { Registrar } from './registrar.js'
import { CountTable, HistogramTable } from './series.js'

/** Recorded by the last stage (request-log.ts), once per response of one listener. */
export interface RequestMeter {
  /** `rule`: the matched rule's index, undefined when none matched; `ms`: the whole request */
  response: (rule: number | undefined, status: number, reason: Reason, ms: number) => void
  /** a request refused by node's HTTP parser before fastify saw it (431, 400, 408): counted, not timed */
  refused: (status: number, reason: Reason) => void
  /** the `rule` label of a rule's index: `<METHOD> <path pattern>` (also the log line's `rule`) */
  ruleLabel: (rule: number) => string
}

/** Buckets, in seconds. A gateway denial takes ~0.1 ms, a proxied request the upstream's time. */
export const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** The listeners whose responses are counted, as the `mode` label. */
export const MODES = ['proxy', 'authz', 'websocket'] as const
export type Mode = typeof MODES[number]

const REASON_INDEX = new Map<string, number>(REASONS.map((r, i) => [r, i]))
const INTERNAL_ERROR = REASON_INDEX.get('internal_error') as number

/** `rules`: the configured rules, in order: `rule` label `<METHOD> <path pattern>`. */
export function requestMetrics (
  r: Registrar, rules: ReadonlyArray<{ method: string, path: string }>
): { meters: Record<Mode, RequestMeter>, labelSets: () => number } {
  // label values by index: index 0 is "none" (no rule matched, or none was evaluated)
  const ruleLabels = ['none', ...rules.map((rule) => `${rule.method} ${rule.path}`)]
  const ruleLabel = (i: number): string => ruleLabels[i] ?? 'none'
  const nReasons = REASONS.length
  // each mode's slots follow the previous mode's
  const perMode = (ruleLabels.length + 1) * 1000 * nReasons
  const perModeTimed = (ruleLabels.length + 1) * 1000

  // slot = mode * perMode + ((rule + 1) * 1000 + status) * nReasons + reason
  const requests = new CountTable((slot) => {
    const mode = Math.floor(slot / perMode)
    const inMode = slot - mode * perMode
    const reason = inMode % nReasons
    const rest = (inMode - reason) / nReasons
    const status = rest % 1000
    return {
      mode: MODES[mode] as string,
      rule: ruleLabel((rest - status) / 1000),
      status: String(status),
      status_class: statusClass(status),
      reason: REASONS[reason] as string
    }
  })
  r.counter({
    name: 'keygate_requests_total',
    help: 'Responses, by mode (proxy: the data plane; authz: the authorizer listener; websocket: the data plane\'s ' +
      'WebSocket upgrades, 101 when the upgrade went through), matched rule ("none" when no rule matched or none was ' +
      'evaluated), HTTP status, its class and decision reason.',
    labelNames: ['mode', 'rule', 'status', 'status_class', 'reason'],
    collect () { requests.exportTo(this) }
  })

  // slot = mode * perModeTimed + (rule + 1) * 1000 + status
  const duration = r.histogram(new HistogramTable(
    'keygate_request_duration_seconds',
    'Whole requests, from fastify receiving the request to the last byte of the response, by mode, rule, status and ' +
    'its class.',
    REQUEST_BUCKETS,
    (slot) => {
      const mode = Math.floor(slot / perModeTimed)
      const inMode = slot - mode * perModeTimed
      const status = inMode % 1000
      return {
        mode: MODES[mode] as string,
        rule: ruleLabel(Math.floor(inMode / 1000)),
        status: String(status),
        status_class: statusClass(status)
      }
    }
  ))

  const meterOf = (mode: number): RequestMeter => {
    const base = mode * perMode
    const baseTimed = mode * perModeTimed
    return {
      response (rule, status, reason, ms) {
        const i = rule === undefined ? 0 : rule + 1
        const s = status >= 100 && status <= 999 ? status : 0
        requests.add(base + ((i * 1000) + s) * nReasons + (REASON_INDEX.get(reason) ?? INTERNAL_ERROR))
        duration.observe(baseTimed + i * 1000 + s, ms)
      },
      refused (status, reason) {
        requests.add(base + status * nReasons + (REASON_INDEX.get(reason) ?? INTERNAL_ERROR))
      },
      ruleLabel: (rule) => ruleLabel(rule + 1)
    }
  }
  return {
    meters: { proxy: meterOf(0), authz: meterOf(1), websocket: meterOf(2) },
    labelSets: () => requests.size + duration.size
  }
}

/** `2xx` for 200 ... (`0xx` for a response without a status) */
function statusClass (status: number): string {
  return `${(status / 100) | 0}xx`
}
