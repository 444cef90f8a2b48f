/**
 * The `redis` section at config load: the topology forms of `redis.url`, passwords
 * only from the environment (any form), problems named by field without echoing a
 * secret, and a Cluster's hash-tag requirement on `redis.prefix`.
 */
import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

const withRedis = (redis: string): string => `${MINIMAL_CONFIG}redis: ${redis}\n`

t.test('every topology form is accepted, from the file or the environment', async (t) => {
  for (const url of ['redis://10.0.0.1:6379/2', 'rediss://redis.internal', 'redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster?db=1', 'rediss+sentinel://s1/m']) {
    t.equal(parseConfig(withRedis(`{ url: "${url}" }`)).redis.url, url, `file: ${url}`)
    t.equal(parseConfig(MINIMAL_CONFIG, { KEYGATE_REDIS_URL: url }).redis.url, url, `environment: ${url}`)
  }
  const cluster = parseConfig(withRedis('{ url: "redis+cluster://n1:7000,n2:7001", prefix: "{keygate}:" }'))
  t.equal(cluster.redis.url, 'redis+cluster://n1:7000,n2:7001')
  t.equal(cluster.redis.prefix, '{keygate}:')
})

t.test('a Cluster URL needs a hash tag in the prefix, named and explained', async (t) => {
  const found = configProblems(withRedis('{ url: "redis+cluster://n1:7000" }'))
  t.equal(found.length, 1)
  t.match(found[0], /^redis\.prefix: a Redis Cluster registry needs a hash tag in the prefix, such as "\{keygate\}:", so that every registry key hashes to one slot .*got "keygate:"/)
  t.match(configProblems(withRedis('{ url: "redis+cluster://n1", prefix: "app:{}:" }')), [/^redis\.prefix: .*hash tag/], 'an empty tag is no tag')
  t.match(configProblems(MINIMAL_CONFIG, { KEYGATE_REDIS_URL: 'rediss+cluster://:pw@n1:7000' }), [/^redis\.prefix: /], 'also when the URL comes from the environment')
  t.same(configProblems(withRedis('{ url: "redis+cluster://n1", prefix: "app:{kg}:" }')), [], 'a tag anywhere in the prefix will do')
  t.same(configProblems(withRedis('{ url: "redis+sentinel://s1/m", prefix: "keygate:" }')), [], 'Sentinel needs no tag (one master holds everything)')
})

t.test('a password never comes from the file, in any form', async (t) => {
  for (const url of ['redis://:pw@h:6379', 'rediss://user:pw@h', 'redis+sentinel://:pw@s1/m', 'redis+sentinel://s1/m?sentinel_password=pw', 'redis+cluster://u:pw@n1']) {
    const found = configProblems(withRedis(`{ url: "${url}", prefix: "{kg}:" }`))
    t.ok(found.includes('redis.url: must not hold a password; put the whole URL in KEYGATE_REDIS_URL instead'), `refused in the file: ${url}`)
    t.same(configProblems(MINIMAL_CONFIG + 'redis: { prefix: "{kg}:" }\n', { KEYGATE_REDIS_URL: url }), [], `accepted from the environment: ${url}`)
  }
})

t.test('an unusable URL names redis.url and the reason, never the password, alongside every other problem', async (t) => {
  const found = configProblems(`${MINIMAL_CONFIG}listen: 8080\nredis: { url: "redis+sentinel://:hunter2@s1:26379" }\n`)
  t.match(found.join('\n'), /^listen: /m, 'the other problem is reported too')
  t.match(found.join('\n'), /^redis\.url: must not hold a password/m)
  t.match(found.join('\n'), /^redis\.url: a redis\+sentinel:\/\/ URL names the master after the sentinels/m)
  t.notMatch(found.join('\n'), /hunter2/)

  const fromEnv = configProblems(MINIMAL_CONFIG, { KEYGATE_REDIS_URL: 'http://:hunter2@h' })
  t.match(fromEnv, [/^redis\.url: must start with redis:\/\/, rediss:\/\/, redis\+sentinel:\/\/, rediss\+sentinel:\/\/, redis\+cluster:\/\/ or rediss\+cluster:\/\/$/])
  t.notMatch(fromEnv.join('\n'), /hunter2/, 'the environment\'s secret is not echoed')
  t.match(configProblems(withRedis('{ url: "redis://a:1,b:2" }')), [/^redis\.url: a redis:\/\/ URL names one server/])
  t.match(configProblems(withRedis('{ url: "" }')), [/^redis\.url: /])
})
