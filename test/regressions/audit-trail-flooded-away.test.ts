/**
 * The audit trail could be flooded away: every refused attempt was an entry of the
 * one stream of changes, trimmed by count, so enough refused attempts (any signed-in
 * key can make them) pushed the `key.create` of a backdoor out of it.
 *
 * Now refused attempts are counted apart, one aggregate per principal, action, org
 * and minute, and changes are trimmed by age only (`audit.retention`).
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { AdminError } from '../../src/admin/model/errors.js'
import { AuditLog } from '../../src/admin/store/audit-log.js'
import { fullAdmin } from '../helpers/fixtures.js'
import { redisKeys } from '../../src/registry/redis-keys.js'
import { startRedis, uniquePrefix } from '../helpers/redis.js'

const ATTEMPTS = 20_000

t.test('20,000 refused attempts leave every change in place and add a few counted aggregates', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const admin = fullAdmin(client, keys, 'kg_', 'cli:root')
  const attacker = fullAdmin(client, keys, 'kg_', 'key:AttackerKey00000')
  // a front end's refusal of the attacker, counted as one would be: `denied: <why>` under the caller's org
  const attackerTrail = new AuditLog(client, keys, 'kg_', 'key:AttackerKey00000')

  await admin.putRole('reader', ['users:read'])
  await admin.putUser('mallory', { org: 'acme', role: 'reader' })
  const { result: backdoor } = await admin.createKey({ type: 'personal', user: 'mallory', name: 'backdoor' })
  const changes = await admin.readAudit()
  t.ok(changes.some((e) => e.action === 'key.create' && e.target === `key:${backdoor.id}`), 'the backdoor\'s creation is in the trail')
  const streamLength = await client.xlen(keys.audit)

  // half refused by the registry (audited by the store), half by a front end's permission check
  let refusedByStore = 0
  for (let i = 0; i < ATTEMPTS; i += 500) {
    await Promise.all(Array.from({ length: 500 }, async (_, j) => {
      if ((i + j) % 2 === 0) {
        await attacker.revokeKey(`Missing${String(i + j).padStart(9, '0')}`).catch((err: unknown) => { if (err instanceof AdminError) refusedByStore++ })
      } else {
        await attackerTrail.refused('key.revoke', `key:${backdoor.id}`, 'denied: not a key of user eve', 'acme')
      }
    }))
  }
  t.equal(refusedByStore, ATTEMPTS / 2, 'the store refused every revocation of a missing key')

  t.same(await admin.readAudit(), changes, 'every change is still there, unchanged')
  t.equal(await client.xlen(keys.audit), streamLength, 'no refused attempt is an entry of the stream of changes')

  const refusals = (await admin.readRefusals({ limit: 1000 })).entries
  t.ok(refusals.length >= 2 && refusals.length <= 8, `a few aggregates (${refusals.length}): one per principal, action, org and minute`)
  t.equal(refusals.reduce((n, a) => n + a.count, 0), ATTEMPTS, 'their counts sum to every attempt')
  t.ok(refusals.every((a) => a.actor === 'key:AttackerKey00000' && a.action === 'key.revoke'))
  t.ok(refusals.some((a) => a.org === 'acme' && a.last.result === 'denied: not a key of user eve'), 'the org and the last attempt are kept')
  t.ok(refusals.some((a) => a.org === undefined && a.first.result.startsWith('error: key "Missing')), 'the first attempt is kept')
  const ttl = await client.ttl(keys.auditRefused(Date.parse(refusals[0]?.minute ?? '')))
  t.ok(ttl > 29 * 86_400 && ttl <= 30 * 86_400 + 60, `aggregates expire on their own (audit.refusals_retention, default 30d): ttl ${ttl}s`)

  // one more change still lands after the flood
  await admin.revokeKey(backdoor.id)
  t.match((await admin.readAudit()).at(-1), { action: 'key.revoke', target: `key:${backdoor.id}`, org: 'acme', result: 'ok' })
})

t.test('changes are trimmed by age (audit.retention), never by count', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const store = fullAdmin(client, keys, 'kg_', 'cli:root', { retentionMs: 86_400_000, refusalsRetentionMs: 86_400_000 })

  // 1,000 entries older than the retention (explicit ids: two days ago), then one change
  const old = Date.now() - 2 * 86_400_000
  for (let i = 0; i < 1000; i++) await client.xadd(keys.audit, `${old}-${i}`, 'action', 'old')
  await store.putRole('reader', ['users:read'])
  const left = await client.xlen(keys.audit)
  t.ok(left <= 200, `entries past the retention are trimmed (MINID ~ trims whole stream nodes): ${left} left of 1001`)
  t.match((await store.readAudit()).at(-1), { action: 'role.put', target: 'role:reader', result: 'ok' })

  // recent entries are never trimmed, however many
  for (let i = 0; i < 1000; i++) await store.putRole(`r${i}`, [])
  const recent = (await store.readAudit()).filter((e) => e.action === 'role.put')
  t.equal(recent.length, 1001, 'every recent change is kept')
})
