// A configuration file with a recursive YAML alias (`redis: &a { url: *a }`) made the
// loader throw a TypeError ("Converting circular structure to JSON") instead of its
// ConfigError, so `keygate serve` and `keygate config check` printed a stack rather than
// the problem. Found by the configuration loader's fuzz test (test/integration/fuzz/).
import t from 'tap'
import { ConfigError, parseConfig } from '../../src/config/load.js'

const RECURSIVE = ['redis: &a { url: *a }', 'routes: &r [*r]', 'upstreams: { core: &c { url: [*c] } }', 'x: &x { y: { z: *x } }']

for (const text of RECURSIVE) {
  t.test(`a recursive alias is a ConfigError: ${text}`, async (t) => {
    t.throws(() => parseConfig(text, {}, 'recursive.yaml'), ConfigError, 'the loader\'s own error')
    try {
      parseConfig(text, {}, 'recursive.yaml')
    } catch (err: unknown) {
      t.match((err as ConfigError).problems, [/^YAML: .*alias/], 'the problem names the alias')
    }
  })
}

t.test('an alias that is not recursive still loads', async (t) => {
  const config = parseConfig('upstreams: { core: &u { url: "http://127.0.0.1:3000" }, other: *u }\n' +
    'routes: [{ prefix: /api/v1, upstream: core }]\n', {}, 'aliases.yaml')
  t.equal(config.upstreams.other?.url, 'http://127.0.0.1:3000')
})
