// Launchers for the benchmark's own child servers (compiled origin.js, baseline.js,
// hello.js, grpc-hello.js and connect-hello.js, in the bench's build directory), built on the reusable
// spawnServer helper.
import { connect } from 'node:net'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { freePort } from './port.js'
import { nodeCommand, spawnServer, type ChildServer, type Launcher } from './process.js'
import type { ScenarioContext } from './types.js'

export const BENCH_PATH = '/api/v1/users'

/** The upstream stub, on the load generator's CPU so it never competes with the server under test. */
export async function startOrigin (distDir: string, cpus: string | undefined):
Promise<ChildServer & { targets: string[] }> {
  const port = await freePort()
  const extra = [await freePort(), await freePort()]
  const child = await spawnServer({
    name: 'origin',
    command: process.execPath,
    args: [join(distDir, 'origin.js')],
    env: { PORT: String(port), HOST: '127.0.0.1', EXTRA_PORTS: extra.join(',') },
    cpus,
    port,
    readyUrl: `http://127.0.0.1:${port}${BENCH_PATH}`,
    isReady: (status) => status === 200
  })
  // the origin's port and its two extra listeners: three origins for the "3 targets" row
  return Object.assign(child, { targets: [port, ...extra].map((p) => `http://127.0.0.1:${p}`) })
}

/**
 * The origin, on the load generator's CPUs when pinned, and the context every server of a run starts in (the
 * pinning's CPUs; none: unpinned).
 */
export async function startOriginContext (
  distDir: string, cpus: Pick<ScenarioContext, 'serverCpus' | 'auxCpus'> = { serverCpus: undefined, auxCpus: undefined }
): Promise<{ origin: ChildServer, ctx: ScenarioContext }> {
  const origin = await startOrigin(distDir, cpus.auxCpus)
  const ctx = {
    originUrl: `http://127.0.0.1:${origin.port}`,
    originTargets: origin.targets,
    serverCpus: cpus.serverCpus,
    auxCpus: cpus.auxCpus,
    distDir
  }
  return { origin, ctx }
}

/** The proxies without auth: the lean floor (bench/lean-proxy.ts) and the two fastify ones (bench/baseline.ts). */
export type PlainProxy = 'lean' | 'http-proxy' | 'reply-from'

/**
 * A proxy with no auth: by default the baseline, `node:http` + undici (lean-proxy.ts);
 * `http-proxy`: fastify + @fastify/http-proxy; `reply-from`: fastify + @fastify/reply-from.
 * Ready once a request round-trips to the origin.
 */
export async function startBaseline (
  distDir: string,
  originUrl: string,
  cpus: string | undefined,
  launcher?: Launcher,
  proxy: PlainProxy = 'lean'
): Promise<ChildServer> {
  const port = await freePort()
  return await spawnServer({
    name: proxy === 'lean' ? 'baseline' : proxy,
    ...nodeCommand([join(distDir, proxy === 'lean' ? 'lean-proxy.js' : 'baseline.js')], launcher),
    env: { PORT: String(port), HOST: '127.0.0.1', ORIGIN_URL: originUrl, PROXY: proxy },
    cpus,
    port,
    readyUrl: `http://127.0.0.1:${port}${BENCH_PATH}`,
    isReady: (status) => status === 200
  })
}

/** The stand-in OpenTelemetry collector (bench/otlp-sink.ts), on the load generator's CPU. */
export async function startOtlpSink (distDir: string, cpus: string | undefined): Promise<ChildServer> {
  const port = await freePort()
  return await spawnServer({
    name: 'otlp-sink',
    command: process.execPath,
    args: [join(distDir, 'otlp-sink.js')],
    env: { PORT: String(port), HOST: '127.0.0.1' },
    cpus,
    port,
    readyUrl: `http://127.0.0.1:${port}/`,
    isReady: (status) => status === 200
  })
}

/** The hello-world (bench/hello.ts): 200, empty body, for any GET; fastify's, or node:http's alone. */
export async function startHello (
  distDir: string,
  cpus: string | undefined,
  launcher?: Launcher,
  server: 'fastify' | 'node-http' = 'fastify'
): Promise<ChildServer> {
  const port = await freePort()
  return await spawnServer({
    name: server === 'fastify' ? 'hello' : 'hello-node-http',
    ...nodeCommand([join(distDir, 'hello.js')], launcher),
    env: { PORT: String(port), HOST: '127.0.0.1', HELLO: server },
    cpus,
    port,
    readyUrl: `http://127.0.0.1:${port}/`,
    isReady: (status) => status === 200
  })
}

/** The floors of the gRPC authorizer's row: grpc-js with proto-loader's codec or keygate's, or Connect. */
export type GrpcFloor = 'proto-loader' | 'lean' | 'connect'

/**
 * A floor of the gRPC authorizer's row, Envoy's Check answered OK, no decision: grpc-js
 * (bench/grpc-hello.ts) with proto-loader's codec, or (`lean`) keygate's Check codec; or
 * Connect for Node (`connect`, bench/connect-hello.ts). Ready once its port takes a connection.
 */
export async function startGrpcHello (
  distDir: string, cpus: string | undefined, floor: GrpcFloor, launcher?: Launcher
): Promise<ChildServer> {
  const port = await freePort()
  return await spawnServer({
    name: floor === 'connect' ? 'connect-hello' : `grpc-hello-${floor}`,
    ...nodeCommand([join(distDir, floor === 'connect' ? 'connect-hello.js' : 'grpc-hello.js')], launcher),
    env: { PORT: String(port), HOST: '127.0.0.1', CODEC: floor },
    cpus,
    port,
    waitReady: async (signal) => { await waitForPort(port, signal) }
  })
}

async function waitForPort (port: number, signal: AbortSignal): Promise<void> {
  for (;;) {
    signal.throwIfAborted()
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => { resolve(false) })
    })
    if (open) return
    await delay(100)
  }
}
