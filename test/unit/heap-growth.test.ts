import t from 'tap'
import { spawnSync } from 'node:child_process'
import { boundHeapGrowth } from '../../src/heap-growth.js'
import { TS_LOADER_ARGS } from '../helpers/ts-loader.js'

/** the source, loaded in the child through tap's TypeScript loader (no build needed) */
const module = new URL('../../src/heap-growth.js', import.meta.url).href
const loader = TS_LOADER_ARGS

t.test('an operator\'s own --heap-growing-percent is kept, in either spelling', async (t) => {
  t.equal(boundHeapGrowth(['--heap-growing-percent=50']), false)
  t.equal(boundHeapGrowth(['--heap_growing_percent=50']), false)
  t.equal(boundHeapGrowth(['--heap-growing-percent', '50']), false)
})

t.test('otherwise the cap is set, and node accepts it at run time', async (t) => {
  // in a child process: V8's flags are process-wide
  const probe = spawnSync(process.execPath, [...loader, '--input-type=module', '-e', `import { boundHeapGrowth } from ${JSON.stringify(module)}; process.stdout.write(String(boundHeapGrowth([])))`], { encoding: 'utf8' })
  t.equal(probe.status, 0, probe.stderr)
  t.equal(probe.stdout, 'true')
})
