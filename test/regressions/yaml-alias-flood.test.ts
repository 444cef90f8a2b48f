// A configuration file whose aliases expand past the YAML library's bound (a "billion
// laughs" document) made the loader throw the library's ReferenceError ("Excessive alias
// count indicates a resource exhaustion attack") instead of its ConfigError, so
// `keygate serve` and `keygate config check` printed a stack rather than the problem.
// Found by the configuration loader's fuzz test (test/integration/fuzz/).
import t from 'tap'
import { ConfigError, parseConfig } from '../../src/config/load.js'

const FLOOD = 'a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n' +
  'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n'

t.test('aliases expanding past the bound are a ConfigError naming YAML', async (t) => {
  t.throws(() => parseConfig(FLOOD, {}, 'flood.yaml'), ConfigError, 'the loader\'s own error')
  try {
    parseConfig(FLOOD, {}, 'flood.yaml')
  } catch (err: unknown) {
    t.match((err as ConfigError).problems, [/^YAML: /], 'the problem is the YAML\'s')
  }
})
