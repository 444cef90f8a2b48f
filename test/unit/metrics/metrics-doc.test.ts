// docs/metrics.md lists exactly the metrics src/metrics/metrics.ts exports: names,
// types and label names (docs move with code).
import t from 'tap'
import { readFileSync } from 'node:fs'
import { createMetrics } from '../../../src/metrics/metrics.js'
import { auditExportMetrics, requestLogMetrics } from '../../../src/metrics/events-metrics.js'
import { parsePromText } from '../../helpers/prom-text.js'

t.test('docs/metrics.md table = the exported keygate_* metrics', async (t) => {
  const doc = readFileSync(new URL('../../../docs/metrics.md', import.meta.url), 'utf8')
  const table = doc.split('<!-- metrics-table:start')[1]?.split('<!-- metrics-table:end')[0] ?? ''
  const documented = [...table.matchAll(/^\| `([a-z_]+)` \| (counter|gauge|histogram) \| ([^|]*) \|/gm)].map((m) => ({
    name: m[1] as string,
    type: m[2] as string,
    labels: [...(m[3] as string).matchAll(/`([a-z_]+)`/g)].map((l) => l[1] as string).sort()
  }))
  t.ok(documented.length > 10, 'the table was found')

  // every family, with one sample of each labelled series
  const m = createMetrics({
    rules: [{ method: 'GET', path: '/x' }],
    upstreams: ['core'],
    upstreamTargets: { core: ['http://10.0.0.1:3300', 'http://10.0.0.2:3300'] },
    redis: { up: true, lastOkAt: 0 },
    defaultMetrics: false,
    cacheStats: () => ({ hits: 0, misses: 0, evictions: 0, invalidations: 0, entries: 0, trackingUp: false, trackingSince: 0 }),
    logStats: { writeErrors: 0, droppedLines: 0 }
  })
  // (the request log's and the audit export's, registered by app.ts and the export on the same registry)
  requestLogMetrics(m.registry, () => ({ held: 0, dropped: 0, written: 0 }))
  auditExportMetrics(m.registry, () => ({ shipped: 0, failures: 0, pending: 0, lagSeconds: 0, leader: 0 }))
  m.requests.response(0, 200, 'allowed', 1)
  m.shadow.difference('0', 'allow', 'missing_permission')
  const families = parsePromText(await m.registry.metrics())
  const exported = [...families.values()].map((f) => ({
    name: f.name,
    type: f.type,
    labels: [...new Set(f.samples.flatMap((s) => Object.keys(s.labels)).filter((l) => l !== 'le'))].sort()
  }))
  const byName = (a: { name: string }, b: { name: string }): number => a.name < b.name ? -1 : 1
  t.same(documented.sort(byName), exported.sort(byName))
  for (const f of families.values()) t.ok(f.name.startsWith('keygate_'), `${f.name} is keygate's`)
})
