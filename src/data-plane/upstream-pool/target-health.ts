/**
 * One target's health: up (takes requests) or out. Thresholds bound flapping: the
 * active check takes a target out after `unhealthy_after` consecutive failed checks
 * and puts it back after `healthy_after` consecutive passed ones; passive ejection
 * takes it out after `passive.failures` consecutive connection failures of real
 * requests. An ejected target comes back through the active check when there is one,
 * else after `passive.ejection`. Every change is reported (`onChange`), once.
 */

export interface HealthRules {
  unhealthyAfter: number
  healthyAfter: number
  passiveFailures: number
  /** how long a passively ejected target stays out; undefined: until the active check puts it back */
  ejectionMs: number | undefined
}

export type HealthChange = 'check_failed' | 'check_passed' | 'ejected' | 'ejection_over'

export class TargetHealth {
  /** read on every pick: a plain field */
  up = true
  private failedChecks = 0
  private passedChecks = 0
  private connectionFailures = 0
  private ejection: NodeJS.Timeout | undefined

  constructor (
    private readonly rules: HealthRules,
    private readonly onChange: (up: boolean, why: HealthChange) => void
  ) {}

  /** An active check's result. */
  checked (passed: boolean): void {
    if (passed) {
      this.failedChecks = 0
      this.passedChecks++
      if (!this.up && this.passedChecks >= this.rules.healthyAfter) this.set(true, 'check_passed')
    } else {
      this.passedChecks = 0
      this.failedChecks++
      if (this.up && this.failedChecks >= this.rules.unhealthyAfter) this.set(false, 'check_failed')
    }
  }

  /** A real request got its response headers from the target. */
  responded (): void {
    this.connectionFailures = 0
  }

  /** A real request's connection to the target failed before a response. */
  connectionFailed (): void {
    this.connectionFailures++
    if (!this.up || this.connectionFailures < this.rules.passiveFailures) return
    this.passedChecks = 0
    this.set(false, 'ejected')
    const ms = this.rules.ejectionMs
    if (ms !== undefined) {
      this.ejection = setTimeout(() => { this.ejection = undefined; this.set(true, 'ejection_over') }, ms)
      this.ejection.unref()
    }
  }

  stop (): void {
    clearTimeout(this.ejection)
    this.ejection = undefined
  }

  private set (up: boolean, why: HealthChange): void {
    this.up = up
    this.connectionFailures = 0
    this.failedChecks = 0
    this.onChange(up, why)
  }
}
