/** What the admin listener and each of its parts (the API, the console, /metrics) are given. */
import type { Logger } from 'pino'
import type { Assertions } from '../assertion/assertions.js'
import type { Config } from '../config/schema.js'
import type { DecisionFactory } from '../decision/factory.js'
import type { Metrics } from '../metrics/metrics.js'
import type { RedisHealth, RegistryClient } from '../registry/redis-client.js'
import type { UsageRecorder } from '../usage/last-used.js'
import type { Sso } from './sso/index.js'

export interface AdminPlaneOptions {
  config: Config
  logger: Logger
  health: RedisHealth
  redis: RegistryClient
  /** the data plane's decision: admin keys are authenticated exactly as on the data plane */
  decisions: DecisionFactory
  /** the process's metrics registry, served at /metrics */
  metrics: Metrics
  /** notes a key's use (last_used_at) when it signs in */
  usage?: UsageRecorder
  /** the signed identity assertion, whose JWK Set is served here */
  assertions?: Assertions
  /** SSO sessions and sign-in (src/admin/sso/); built by the admin plane */
  sso?: Sso
}
