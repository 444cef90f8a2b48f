/**
 * `redis.url` (src/config/redis-url.ts) and what createRedis builds from it
 * (connectionPlan in src/registry/redis-client.ts): the three topologies, the
 * fail-fast options on every one of them, the Cluster hash-tag rule, and the
 * classification of error replies.
 */
import t from 'tap'
import { connectionPlan } from '../../../src/registry/redis-client.js'
import { isUnavailableReply, isWrongTypeReply, registryErrorKind, unavailableReply } from '../../../src/registry/redis-replies.js'
import { describeTarget, hashTag, parseRedisUrl, redactedUrl, RedisUrlError, urlHoldsSecret } from '../../../src/config/redis-url.js'

const redisCfg = (url: string) => ({ url, prefix: '{keygate}:', command_timeout_ms: 500, connect_timeout_ms: 1000 })

t.test('standalone: redis:// and rediss://', async (t) => {
  const cases: Array<[string, object]> = [
    ['redis://127.0.0.1', { topology: 'standalone', tls: false, host: '127.0.0.1', port: 6379, db: 0 }],
    ['redis://redis.internal:6380/2', { host: 'redis.internal', port: 6380, db: 2 }],
    ['rediss://redis.internal/', { tls: true, port: 6379, db: 0 }],
    ['REDIS://h:1', { topology: 'standalone', host: 'h', port: 1 }],
    ['redis://[::1]:7000', { host: '::1', port: 7000 }],
    ['redis://:s%40cret@h:6379', { password: 's@cret' }],
    ['redis://gateway:pw@h', { username: 'gateway', password: 'pw' }]
  ]
  for (const [url, want] of cases) t.match(parseRedisUrl(url), want, url)
  t.notOk('password' in parseRedisUrl('redis://h'), 'no credentials: none passed on')
})

t.test('Sentinel: the sentinels, then the master name; ?db=; sentinel credentials', async (t) => {
  t.same(parseRedisUrl('redis+sentinel://10.0.0.1:26379,10.0.0.2,[::1]:26380/mymaster'), {
    topology: 'sentinel',
    tls: false,
    sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: '10.0.0.2', port: 26379 }, { host: '::1', port: 26380 }],
    name: 'mymaster',
    db: 0
  })
  t.match(parseRedisUrl('redis+sentinel://:pw@s1:26379/m?db=3&sentinel_password=spw'), { password: 'pw', name: 'm', db: 3, sentinelPassword: 'spw' })
  t.match(parseRedisUrl('rediss+sentinel://s1/m'), { topology: 'sentinel', tls: true })
})

t.test('Cluster: seed nodes, no path', async (t) => {
  t.same(parseRedisUrl('redis+cluster://n1:7000,n2:7001,n3'), {
    topology: 'cluster',
    tls: false,
    nodes: [{ host: 'n1', port: 7000 }, { host: 'n2', port: 7001 }, { host: 'n3', port: 6379 }]
  })
  t.match(parseRedisUrl('rediss+cluster://u:p@n1:7000/'), { topology: 'cluster', tls: true, username: 'u', password: 'p' })
})

t.test('an unusable URL is refused with a reason, never echoing a password', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['http://h:6379', /must start with redis:\/\/, rediss:\/\/, redis\+sentinel:\/\//],
    ['redis+sentinel://s1:26379', /names the master after the sentinels/],
    ['redis+sentinel://s1:26379/', /names the master/],
    ['redis+sentinel://s1/m?db=x', /\?db= must be a database number/],
    ['redis+sentinel://s1/m?family=6', /unknown parameter "family"/],
    ['redis+cluster://n1:7000/1', /takes no path/],
    ['redis+cluster://n1:7000?x=1', /takes no \?parameters/],
    ['redis://a:6379,b:6379', /names one server; for several, use redis\+sentinel/],
    ['redis://h:6379/db1', /database number/],
    ['redis://h:6379?db=1', /takes no \?parameters/],
    ['redis://h:70000', /"h:70000" is not host\[:port\]/],
    ['redis://', /names no host/],
    ['redis://h#x', /fragment/],
    ['redis://user@h', /a username needs a password/]
  ]
  for (const [url, reason] of cases) t.throws(() => parseRedisUrl(url), { name: 'RedisUrlError', message: reason }, url)

  for (const url of ['redis://:hunter2@h:99999', 'redis+sentinel://:hunter2@s1:26379', 'redis+cluster://u:hunter2@n1/3', 'redis://:hun/ter2@h']) {
    let message = ''
    try { parseRedisUrl(url) } catch (err) { if (err instanceof RedisUrlError) message = err.message }
    t.ok(message !== '' && !message.includes('hunter2') && !message.includes('hun'), `refused without the password: ${message}`)
  }
})

t.test('urlHoldsSecret: a password or a sentinel password, in any form', async (t) => {
  for (const url of ['redis://:pw@h', 'rediss://u:pw@h', 'redis+sentinel://:pw@s/m', 'redis+sentinel://s/m?sentinel_password=x', 'redis+cluster://u:pw@n1,n2']) t.ok(urlHoldsSecret(url), url)
  for (const url of ['redis://h:6379', 'redis+sentinel://s1,s2/m?db=1', 'redis+cluster://n1:7000', 'redis://u:@h']) t.notOk(urlHoldsSecret(url), url)
})

t.test('hashTag reads a prefix as Redis Cluster reads a key: first { to the first } after it, not empty', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['{keygate}:', 'keygate'],
    ['app:{kg}:', 'kg'],
    ['keygate:', undefined],
    ['{}keygate:', undefined], // an empty tag: Redis hashes the whole key
    ['{}{kg}:', undefined], // only the first { counts
    ['{kg:', undefined],
    ['kg}{x}:', 'x']
  ]
  for (const [prefix, tag] of cases) t.equal(hashTag(prefix), tag, prefix)
})

t.test('describeTarget names the topology and addresses, never credentials', async (t) => {
  t.equal(describeTarget(parseRedisUrl('rediss+sentinel://:pw@s1,[::1]:1/m?db=2')), 'sentinel master "m" via s1:26379,[::1]:1 db 2 (TLS)')
  t.equal(describeTarget(parseRedisUrl('redis+cluster://u:pw@n1:7000')), 'cluster seeds n1:7000')
  t.equal(describeTarget(parseRedisUrl('redis://:pw@h')), 'standalone h:6379 db 0')
})

t.test('every topology gets the fail-fast options', async (t) => {
  const failFast = { commandTimeout: 500, connectTimeout: 1000, maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: true, connectionName: 'keygate' }

  const standalone = connectionPlan(redisCfg('redis://:pw@h:6380/1'))
  t.match(standalone, { topology: 'standalone', options: { ...failFast, host: 'h', port: 6380, db: 1, password: 'pw', enableOfflineQueue: false } })

  const sentinel = connectionPlan(redisCfg('rediss+sentinel://:pw@s1,s2/m?db=1&sentinel_password=spw'))
  t.match(sentinel, {
    topology: 'sentinel',
    options: {
      ...failFast,
      sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }],
      name: 'm',
      role: 'master',
      db: 1,
      password: 'pw',
      sentinelPassword: 'spw',
      sentinelCommandTimeout: 500,
      failoverDetector: true,
      enableOfflineQueue: false,
      tls: {},
      sentinelTLS: {},
      enableTLSForSentinelMode: true
    }
  })

  const cluster = connectionPlan(redisCfg('redis+cluster://u:pw@n1:7000,n2:7001'))
  t.match(cluster, {
    topology: 'cluster',
    nodes: [{ host: 'n1', port: 7000 }, { host: 'n2', port: 7001 }],
    options: { enableOfflineQueue: false, scaleReads: 'master', redisOptions: { ...failFast, username: 'u', password: 'pw' } }
  })
  if (cluster.topology !== 'cluster') throw new Error('not a cluster plan')
  const redirections = cluster.options.maxRedirections ?? 0
  t.ok(redirections >= 3 && redirections * 100 <= 1000, `redirections are bounded (${redirections} x 100 ms)`)

  // reconnects back off to at most 1 s and never give up, on every topology
  if (standalone.topology === 'cluster' || sentinel.topology === 'cluster') throw new Error('unexpected plan')
  for (const [what, retry] of [
    ['standalone reconnect', standalone.options.retryStrategy],
    ['sentinel reconnect', sentinel.options.retryStrategy],
    ['sentinel round', sentinel.options.sentinelRetryStrategy],
    ['cluster reconnect', cluster.options.clusterRetryStrategy]
  ] as const) {
    const delays = [1, 2, 5, 50, 10_000].map((n) => (retry as (n: number) => unknown)(n))
    t.ok(delays.every((d) => typeof d === 'number' && d > 0 && d <= 1000), `${what}: ${delays.join(', ')} ms`)
  }
  t.equal((standalone.options.reconnectOnError as (e: Error) => unknown)(new Error('READONLY You can\'t write against a read only replica.')), 1, 'a READONLY reply reconnects (to the current primary), without resending')
  t.equal((standalone.options.reconnectOnError as (e: Error) => unknown)(new Error('ERR x')), false)
})

t.test('a queueing client (the CLI) queues while connecting, and gives up instead of hanging', async (t) => {
  const standalone = connectionPlan(redisCfg('redis://h'), { queueWhileConnecting: true })
  const sentinel = connectionPlan(redisCfg('redis+sentinel://s1/m'), { queueWhileConnecting: true })
  const cluster = connectionPlan(redisCfg('redis+cluster://n1'), { queueWhileConnecting: true })
  if (standalone.topology === 'cluster' || sentinel.topology === 'cluster' || cluster.topology !== 'cluster') throw new Error('unexpected plan')
  t.equal(standalone.options.enableOfflineQueue, true)
  t.equal(standalone.options.maxRetriesPerRequest, 0, 'a queued command fails after the first failed connect')
  t.equal(sentinel.options.enableOfflineQueue, true)
  t.equal(cluster.options.enableOfflineQueue, true)
  t.type(sentinel.options.sentinelRetryStrategy?.(1), 'number')
  t.equal(sentinel.options.sentinelRetryStrategy?.(10), null, 'sentinels unreachable: the CLI gives up after a few rounds')
  t.type(cluster.options.clusterRetryStrategy?.(1), 'number')
  t.equal(cluster.options.clusterRetryStrategy?.(10), null, 'no cluster node reachable: the CLI gives up after a few rounds')
})

t.test('error replies: unavailability versus a bad record', async (t) => {
  const reply = (message: string): Error => Object.assign(new Error(message), { name: 'ReplyError' })
  for (const message of [
    'LOADING Redis is loading the dataset in memory',
    'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.',
    'NOPERM this user has no permissions to run the \'evalsha\' command',
    'NOAUTH Authentication required.',
    'READONLY You can\'t write against a read only replica.',
    'CLUSTERDOWN The cluster is down',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'MOVED 3999 127.0.0.1:6381'
  ]) {
    t.ok(isUnavailableReply(reply(message)), message.split(' ')[0] as string)
    t.equal(registryErrorKind(reply(message)), 'unavailable')
  }
  t.equal(unavailableReply(new Error('Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down')), 'CLUSTERDOWN', 'also when ioredis wraps it')
  for (const message of ['Command timed out', 'Connection is closed.', 'Stream isn\'t writeable and enableOfflineQueue options is false']) {
    t.notOk(isUnavailableReply(new Error(message)), `${message}: not a reply`)
    t.equal(registryErrorKind(new Error(message)), 'unavailable', `${message}: still an outage`)
  }
  const wrongType = reply('WRONGTYPE Operation against a key holding the wrong kind of value script: 1a2b, on @user_script:2.')
  t.ok(isWrongTypeReply(wrongType))
  t.notOk(isUnavailableReply(wrongType))
  t.equal(registryErrorKind(wrongType), 'bad_record', 'WRONGTYPE stays a bad record (deny)')
  t.equal(registryErrorKind(reply('ERR Error running script (call to f_1): @user_script:2: WRONGTYPE Operation against a key')), 'bad_record', 'also inside a script error')
  t.notOk(isUnavailableReply(reply('ERR unknown command')), 'an ERR is not a known unavailability (but still an outage, never an allow)')
  t.notOk(isUnavailableReply('LOADING'), 'only errors')
})

t.test('redactedUrl keeps the URL as written, its passwords as ***', async (t) => {
  const cases: Array<[string, string]> = [
    ['redis://127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0'],
    ['redis://:pw@h:6379', 'redis://:***@h:6379'],
    ['rediss://kg:p%40ss:w@h/2', 'rediss://kg:***@h/2'],
    ['redis://onlyone@h', 'redis://***@h'],
    ['redis+sentinel://u:pw@s1,s2:26380/m?sentinel_username=x&sentinel_password=spw&db=1',
      'redis+sentinel://u:***@s1,s2:26380/m?sentinel_username=x&sentinel_password=***&db=1'],
    ['redis+cluster://:pw@n1:7000,n2:7001', 'redis+cluster://:***@n1:7000,n2:7001']
  ]
  for (const [url, shown] of cases) t.equal(redactedUrl(url), shown, url)
})
