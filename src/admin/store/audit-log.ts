/**
 * The audit trail, in two parts that cannot crowd each other out (docs/registry.md):
 *
 *   changes   `<prefix>audit`, a stream: one entry per change, written in the change's
 *             own MULTI/EXEC, kept by age (`audit.retention`, XADD MINID ~), never by
 *             count, so no volume of anything else pushes a change out.
 *   refusals  refused attempts, aggregated: one hash per minute
 *             (`<prefix>audit:refused:<minute>`) with one count per principal, action
 *             and org, plus the first and the last attempt; each hash expires after
 *             `audit.refusals_retention`, and the sorted set `<prefix>audit:refused`
 *             indexes the minutes. A flood of refusals costs a counter increment each.
 *
 * Both are read newest first, a page at a time, with an opaque cursor. Every text
 * written goes through the key redactor: a key typed where a name belongs (on the
 * command line, say) reaches the trail as its id at most.
 */
import { parseDuration } from '../../config/duration.js'
import { createRedactor, type Redactor } from '../../redact.js'
import { fieldsOf, isoTimestamp } from '../../registry/records.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import type { AuditEntry, RefusalAggregate, RefusalAttempt } from '../model/views.js'
import type { KeyPrefixes } from '../../registry/key-format.js'

const DAY = 86_400_000
const MINUTE = 60_000

export interface AuditOptions {
  /** how long changes are kept */
  retentionMs: number
  /** how long refusal aggregates are kept */
  refusalsRetentionMs: number
}

export const DEFAULT_AUDIT_OPTIONS: AuditOptions = { retentionMs: 365 * DAY, refusalsRetentionMs: 30 * DAY }

/** The configuration's `audit` section (durations the schema admitted, above zero). */
export function auditOptions (audit: { retention: string, refusals_retention: string }): AuditOptions {
  return {
    retentionMs: parseDuration(audit.retention) ?? DEFAULT_AUDIT_OPTIONS.retentionMs,
    refusalsRetentionMs: parseDuration(audit.refusals_retention) ?? DEFAULT_AUDIT_OPTIONS.refusalsRetentionMs
  }
}

export interface AuditQuery {
  /** entries per page (1-1000) */
  limit: number
  /** from the previous page's `next_cursor`: continue with older entries */
  cursor?: string | undefined
  /** only entries newer than this long ago */
  sinceMs?: number | undefined
  /** only entries of this org (an org admin's view) */
  org?: string | undefined
}

export interface AuditPage<T> {
  entries: T[]
  /** present when older entries may follow */
  next_cursor?: string
}

/** the most stream entries one filtered page reads before it answers */
const MAX_SCAN = 10_000

export class AuditLog {
  private readonly redact: Redactor

  constructor (
    private readonly redis: RegistryClient,
    private readonly keys: RedisKeys,
    keyPrefix: KeyPrefixes,
    private readonly actor: string,
    private readonly options: AuditOptions = DEFAULT_AUDIT_OPTIONS
  ) {
    this.redact = createRedactor(keyPrefix)
  }

  /** XADD arguments of a change's entry, for the change's own transaction; older entries are trimmed by age. */
  changeArgs (
    action: string,
    target: string,
    result: string,
    detail: Record<string,
    string>,
    org?: string,
    now = Date.now()
  ): [string, 'MINID', '~', string, '*', ...string[]] {
    const fields = [
      'time',
      isoTimestamp(now),
      'actor',
      this.redact.text(this.actor),
      'action',
      action,
      'target',
      this.redact.text(target),
      'result',
      this.redact.text(result)
    ]
    if (org !== undefined && org !== '') fields.push('org', org)
    fields.push('detail', this.redact.text(JSON.stringify(detail)))
    return [this.keys.audit, 'MINID', '~', String(Math.max(0, now - this.options.retentionMs)), '*', ...fields]
  }

  /** Counts one refused attempt in its minute's aggregate (one round trip). */
  async refused (action: string, target: string, result: string, org?: string, now = Date.now()): Promise<void> {
    const minuteMs = now - (now % MINUTE)
    const key = this.keys.auditRefused(minuteMs)
    const id = JSON.stringify([action, this.redact.text(this.actor), org ?? ''])
    const attempt = JSON.stringify({
      time: isoTimestamp(now),
      target: this.redact.text(target),
      result: this.redact.text(result)
    })
    const ttlS = Math.ceil(this.options.refusalsRetentionMs / 1000) + 60
    const tx = this.redis.multi()
      .hincrby(key, `n${id}`, 1)
      .hsetnx(key, `f${id}`, attempt)
      .hset(key, `l${id}`, attempt)
      .expire(key, ttlS)
      .zadd(this.keys.auditRefusedIndex, minuteMs, String(minuteMs))
      .zremrangebyscore(this.keys.auditRefusedIndex, '-inf', `(${now - this.options.refusalsRetentionMs - MINUTE}`)
    const replies = await tx.exec()
    for (const [err] of replies ?? []) if (err !== null) throw err
  }

  /** Every change in range, oldest first (the CLI's listing). */
  async readAll (sinceMs?: number, now = Date.now()): Promise<AuditEntry[]> {
    const start = sinceMs === undefined ? '-' : String(Math.max(0, now - sinceMs))
    return (await this.redis.xrange(this.keys.audit, start, '+')).map(([id, flat]) => entryOf(id, flat))
  }

  /**
   * One page of changes, newest first. With an org filter a page may hold fewer than
   * `limit` entries (at most MAX_SCAN entries are read per page); `next_cursor` says
   * whether to go on.
   */
  async page (q: AuditQuery, now = Date.now()): Promise<AuditPage<AuditEntry>> {
    const start = q.sinceMs === undefined ? '-' : String(Math.max(0, now - q.sinceMs))
    const batch = q.org === undefined ? q.limit + 1 : 1000
    const entries: AuditEntry[] = []
    let end = q.cursor === undefined ? '+' : `(${q.cursor}`
    let scanned = 0
    for (;;) {
      const rows = await this.redis.xrevrange(this.keys.audit, end, start, 'COUNT', batch)
      let lastId: string | undefined
      for (const [id, flat] of rows) {
        const entry = entryOf(id, flat)
        lastId = id
        if (q.org !== undefined && entry.org !== q.org) continue
        if (entries.length === q.limit) return { entries, next_cursor: (entries[entries.length - 1] as AuditEntry).id }
        entries.push(entry)
      }
      scanned += rows.length
      if (rows.length < batch || lastId === undefined) return { entries }
      if (scanned >= MAX_SCAN) return { entries, next_cursor: lastId }
      end = `(${lastId}`
    }
  }

  /** One page of refusal aggregates, newest minute first (within a minute: by action, actor, org). */
  async refusals (q: AuditQuery, now = Date.now()): Promise<AuditPage<RefusalAggregate>> {
    // a minute counts while any of it lies within the range (and the retention)
    const since = q.sinceMs === undefined ? 0 : now - q.sinceMs
    const oldest = `(${Math.max(now - this.options.refusalsRetentionMs, since) - MINUTE}`
    let max = '+inf'
    let resumeMinute = -1
    let skip = 0
    if (q.cursor !== undefined) {
      const [m, s] = q.cursor.split('-').map(Number) as [number, number]
      max = String(m)
      resumeMinute = m
      skip = s
    }
    const entries: RefusalAggregate[] = []
    for (;;) {
      const minutes = await this.redis.zrevrangebyscore(this.keys.auditRefusedIndex, max, oldest, 'LIMIT', 0, 60)
      const pipeline = this.redis.pipeline()
      for (const m of minutes) pipeline.hgetall(this.keys.auditRefused(Number(m)))
      const replies = minutes.length === 0 ? [] : await pipeline.exec() ?? []
      for (let i = 0; i < minutes.length; i++) {
        const minuteMs = Number(minutes[i])
        const aggregates = aggregatesOf(minuteMs, (replies[i]?.[1] ?? {}) as Record<string, string>)
          .filter((a) => q.org === undefined || a.org === q.org)
        for (let j = minuteMs === resumeMinute ? skip : 0; j < aggregates.length; j++) {
          if (entries.length === q.limit) return { entries, next_cursor: `${minuteMs}-${j}` }
          entries.push(aggregates[j] as RefusalAggregate)
        }
      }
      if (minutes.length < 60) return { entries }
      max = `(${minutes[minutes.length - 1] as string}`
    }
  }
}

/** A stream entry as the trail's readers see it (the pages, the export). */
export function entryOf (id: string, flat: string[]): AuditEntry {
  const f = fieldsOf(flat)
  const entry: AuditEntry = {
    id,
    time: f.time ?? '',
    actor: f.actor ?? '',
    action: f.action ?? '',
    target: f.target ?? '',
    result: f.result ?? ''
  }
  if (f.org !== undefined) entry.org = f.org
  if (f.detail !== undefined) entry.detail = f.detail
  return entry
}

/** A minute's hash -> its aggregates, in a stable order (the cursor counts positions in it). */
function aggregatesOf (minuteMs: number, hash: Record<string, string>): RefusalAggregate[] {
  const out: RefusalAggregate[] = []
  for (const field of Object.keys(hash).filter((f) => f.startsWith('n')).sort()) {
    const id = field.slice(1)
    let parts: unknown
    try {
      parts = JSON.parse(id)
    } catch {
      continue
    }
    if (!Array.isArray(parts) || parts.length !== 3) continue
    const [action, actor, org] = parts.map(String) as [string, string, string]
    const aggregate: RefusalAggregate = {
      minute: isoTimestamp(minuteMs),
      actor,
      action,
      count: Number(hash[field]) || 0,
      first: attemptOf(hash[`f${id}`]),
      last: attemptOf(hash[`l${id}`])
    }
    if (org !== '') aggregate.org = org
    out.push(aggregate)
  }
  return out
}

function attemptOf (text: string | undefined): RefusalAttempt {
  try {
    const v = JSON.parse(text ?? '{}') as Partial<RefusalAttempt>
    return { time: String(v.time ?? ''), target: String(v.target ?? ''), result: String(v.result ?? '') }
  } catch {
    return { time: '', target: '', result: '' }
  }
}
