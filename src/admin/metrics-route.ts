/**
 * GET /metrics: Prometheus text exposition of this process's registry (no credential,
 * like /healthz: the admin plane listens on loopback by default, and no metric holds a
 * key, a path or a query string). Every metric: src/metrics/, docs/metrics.md.
 */
import type { FastifyPluginAsync } from 'fastify'
import cluster from 'node:cluster'
import { clusterMetrics, shareWithPrimary } from '../metrics/cluster-metrics.js'
import type { AdminPlaneOptions } from './options.js'

export const metricsRoute: FastifyPluginAsync<AdminPlaneOptions> = async (app, o) => {
  const { registry } = o.metrics
  // under `serve --workers N`, one scrape answers for every worker (cluster-metrics.ts)
  const worker = cluster.isWorker
  if (worker) shareWithPrimary(registry)
  app.get('/metrics', async (_request, reply) => {
    const text = worker ? await clusterMetrics() : await registry.metrics()
    return reply.header('content-type', registry.contentType).send(text)
  })
}
