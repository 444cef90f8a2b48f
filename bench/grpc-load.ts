// The gRPC authorizer's load (bench/grpc-authz.ts, and count.ts's gRPC targets): Envoy's
// Check, from a grpc-js client built from the Envoy protos keygate loads, CALLS calls in
// flight over CHANNELS HTTP/2 connections, as an Envoy with a few connections to the
// cluster sends them; the request Envoy sends for a GET of BENCH_PATH with the personal key.
import * as grpc from '@grpc/grpc-js'
import { loadSync } from '@grpc/proto-loader'
import { setTimeout as delay } from 'node:timers/promises'
import { EXTERNAL_AUTH_PROTO, includeDirs, LOAD_OPTIONS } from '@keygate/gateway/dist/authorizer-grpc/envoy-protos.js'
import { benchKeys } from './keygate.js'
import { BENCH_PATH } from './servers.js'

export const CALLS = 50
export const CHANNELS = 2

type Check = (req: unknown, cb: (err: grpc.ServiceError | null, res: { status?: { code?: number } }) => void) => void

export interface GrpcLoad {
  /** how long the calls go on */
  sec?: number
  /** how many calls are sent in all */
  amount?: number
  /** calls a second at most */
  rate?: number
}

/**
 * CALLS Check calls kept in flight until `sec` seconds have passed or `amount` calls were
 * sent, at most `rate` a second when given; each answered one counted (`refused`: an
 * error, or a status not OK).
 */
export async function grpcLoad (port: number, o: GrpcLoad): Promise<{ answered: number, refused: number }> {
  const def = grpc.loadPackageDefinition(loadSync(EXTERNAL_AUTH_PROTO, { ...LOAD_OPTIONS, includeDirs: includeDirs() }))
  let node: unknown = def
  for (const part of 'envoy.service.auth.v3.Authorization'.split('.')) node = (node as Record<string, unknown>)[part]
  const Authorization = node as new (address: string, creds: grpc.ChannelCredentials, options: grpc.ChannelOptions) =>
  grpc.Client
  const clients = Array.from({ length: CHANNELS }, () => new Authorization(`127.0.0.1:${port}`,
    grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }))
  const request = {
    attributes: {
      source: { address: { socket_address: { address: '203.0.113.9', port_value: 40000 } } },
      request: {
        http: {
          method: 'GET',
          path: BENCH_PATH,
          host: 'api.example',
          headers: {
            ':authority': 'api.example',
            ':method': 'GET',
            ':path': BENCH_PATH,
            authorization: `Bearer ${benchKeys.personal.key}`,
            'user-agent': 'bench',
            'x-request-id': 'r'
          }
        }
      }
    }
  }
  const started = Date.now()
  const until = o.sec === undefined ? Number.POSITIVE_INFINITY : started + o.sec * 1000
  const amount = o.amount ?? Number.POSITIVE_INFINITY
  let answered = 0
  let refused = 0
  let sent = 0
  const loop = async (client: grpc.Client): Promise<void> => {
    const check = (client as unknown as { Check: Check }).Check.bind(client)
    while (Date.now() < until && sent < amount) {
      const wait = o.rate === undefined ? 0 : started + (sent * 1000) / o.rate - Date.now()
      sent++
      if (wait > 0) await delay(wait)
      await new Promise<void>((resolve) => {
        check(request, (err, res) => {
          answered++
          if (err !== null || (res.status?.code ?? 0) !== 0) refused++
          resolve()
        })
      })
    }
  }
  await Promise.all(Array.from({ length: CALLS }, async (_, i) => { await loop(clients[i % CHANNELS] as grpc.Client) }))
  for (const c of clients) c.close()
  return { answered, refused }
}
