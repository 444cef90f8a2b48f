/**
 * Audit entries as OpenTelemetry log records, sent by OpenTelemetry's own OTLP/HTTP
 * logs exporter (`@opentelemetry/exporter-logs-otlp-http`: its encoding, its transport,
 * its retries of a retryable answer within its timeout). Loaded only by a gateway that
 * exports (index.ts).
 *
 * One record per entry (docs/audit-export.md): its time the entry's, severity INFO,
 * event name `keygate.audit`, body `<action> <target> <result>`, and the entry's fields
 * as attributes `keygate.audit.{id,actor,action,target,result,org,detail}`. The texts
 * were redacted when the entry was written (no key, secret or hash is in the trail).
 */
import type { AuditEntry } from '../model/views.js'

export interface AuditShipper {
  /** sends the entries as one export request; rejects when the endpoint did not accept them */
  ship: (entries: readonly AuditEntry[]) => Promise<void>
  shutdown: () => Promise<void>
}

export async function logExporter (url: string, serviceName: string, timeoutMillis: number): Promise<AuditShipper> {
  const [
    { OTLPLogExporter }, { SeverityNumber }, { ExportResultCode }, { resourceFromAttributes }
  ] = await Promise.all([
    import('@opentelemetry/exporter-logs-otlp-http'),
    import('@opentelemetry/api-logs'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources')
  ])
  type Record = Parameters<InstanceType<typeof OTLPLogExporter>['export']>[0][number]
  const exporter = new OTLPLogExporter({ url, timeoutMillis })
  const resource = resourceFromAttributes({ 'service.name': serviceName })
  const scope = { name: 'keygate.audit' }

  function recordOf (e: AuditEntry): Record {
    const ms = Number(e.id.slice(0, e.id.indexOf('-')))
    const hrTime: [number, number] = [Math.floor(ms / 1000), (ms % 1000) * 1_000_000]
    const attributes: Record['attributes'] = {
      'keygate.audit.id': e.id,
      'keygate.audit.actor': e.actor,
      'keygate.audit.action': e.action,
      'keygate.audit.target': e.target,
      'keygate.audit.result': e.result
    }
    if (e.org !== undefined) attributes['keygate.audit.org'] = e.org
    if (e.detail !== undefined) attributes['keygate.audit.detail'] = e.detail
    return {
      hrTime,
      hrTimeObserved: hrTime,
      severityNumber: SeverityNumber.INFO,
      severityText: 'INFO',
      eventName: 'keygate.audit',
      body: `${e.action} ${e.target} ${e.result}`,
      resource,
      instrumentationScope: scope,
      attributes,
      droppedAttributesCount: 0
    }
  }

  return {
    ship: async (entries) => {
      const records = entries.map(recordOf)
      await new Promise<void>((resolve, reject) => {
        exporter.export(records, (result) => {
          if (result.code === ExportResultCode.SUCCESS) resolve()
          else reject(result.error ?? new Error('the OTLP endpoint did not accept the entries'))
        })
      })
    },
    shutdown: async () => { await exporter.shutdown() }
  }
}
