// Contracts between the benchmark runner and the scenarios it measures.

/** A server under test, started by a scenario and stopped by the runner. */
export interface RunningServer {
  /** Port on 127.0.0.1 the load generator targets. */
  port: number
  stop: () => Promise<void>
  /**
   * OS pid of the process serving requests, if it is a child process. Enables
   * the peak-RSS (VmHWM) and server-CPU columns; omit for in-process servers.
   */
  pid?: number
  /**
   * The processes that together serve the scenario (nginx and the keygate authorizer
   * behind it), each with its descendants: the server CPU is their sum, and the
   * report shows each one's share. Undefined: the server CPU is `pid`'s.
   */
  parts?: readonly ServerPart[]
  /** the server's cache misses so far (keygate: `keygate_cache_misses_total`), for Redis round trips per miss */
  cacheMisses?: () => Promise<number>
}

export interface ServerPart {
  label: string
  pid: number
}

/** What a row must reach; the report says for each whether it was met. */
export interface Target {
  /** mean req/s at least */
  reqPerSec?: number
  /** server CPU µs per response at most */
  cpuUsPerReq?: number
  /** the paired CPU/req ratio to the row it is compared with, at least */
  cpuRatio?: number
}

export interface Scenario {
  /** Row label in the report; the first scenario is the baseline. */
  name: string
  /**
   * The name of the scenario this row's ratios are computed against, measured in the
   * same rounds (the fastify hello-world for decision rows). Default: the baseline.
   * The runner also runs it when a filter leaves it out.
   */
  compareWith?: string
  /** Short name in the "compared with" column of rows compared with this one; default: the name up to its first ':'. */
  label?: string
  target?: Target
  start: () => Promise<RunningServer>
  /** Request headers sent with every request, e.g. Authorization. */
  headers: Record<string, string>
  /** Headers built for each request, merged over `headers` (e.g. a new key every request). */
  headersFor?: () => Record<string, string>
  /**
   * The run fails when the registry's scripts ran more often than this per 1,000 responses (its round trips:
   * keygate.ts `RegistryCalls`).
   */
  maxScriptsPer1k?: number
  /** The run fails when the registry read more records than this per 1,000 responses (an unknown key's read is one). */
  maxRecordsPer1k?: number
  /**
   * The run fails when the registry's scripts ran more often than this per cache miss (`cacheMisses`): round trips
   * per miss.
   */
  maxScriptsPerMiss?: number
  /** Request path. Default '/api/v1/users'. */
  path?: string
  /**
   * Status every response must have. Default: any 2xx. Set it for scenarios
   * that are meant to be rejected (e.g. 401 for a malformed-key flood);
   * any other status is counted as "unexpected" and fails the run.
   */
  expectedStatus?: number
}

/** What the runner gives scenario factories. */
export interface ScenarioContext {
  /** Base URL of the shared origin stub, e.g. 'http://127.0.0.1:41234'. */
  originUrl: string
  /** three origins served by the same stub (its port and two more listeners), for the "3 targets" row */
  originTargets?: string[]
  /** `taskset -c` CPU list for servers under test; undefined when not pinning. */
  serverCpus: string | undefined
  /**
   * CPU list of the load generator and origin, for helper processes (e.g. redis-server); undefined when not
   * pinning.
   */
  auxCpus: string | undefined
  /** Absolute path of the bench's build directory (bench/dist/, holding origin.js and baseline.js). */
  distDir: string
  /** the `dist/cli/main.js` keygate rows run; default: this repository's build (BENCH_COMPARE rows set another) */
  keygateCli?: string
  /** BENCH_COMPARE's `dist/cli/main.js`, for the extras that compare builds (instructions) */
  compareCli?: string
}
