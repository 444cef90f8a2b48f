import t from 'tap'
import { readFileSync } from 'node:fs'
import { unsupportedNodeWarning } from '../../../src/cli/node-version.js'

t.test('a warning below the supported Node versions, none from 22.19 on', async (t) => {
  for (const v of ['v20.20.2', 'v22.18.0', 'v18.20.4', 'v21.7.3']) {
    t.match(unsupportedNodeWarning(v), /^warning: keygate supports Node 22\.19 or later/, `${v}: warned`)
    t.match(unsupportedNodeWarning(v), v, `${v}: named`)
  }
  for (const v of ['v22.19.0', 'v22.20.1', 'v24.11.0', 'v25.0.0']) t.equal(unsupportedNodeWarning(v), undefined, `${v}: supported`)
})

t.test('the minimum is the one package.json gives npm', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }
  t.equal(pkg.engines.node, '>=22.19')
})
