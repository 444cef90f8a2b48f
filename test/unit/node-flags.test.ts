/**
 * keygate's heap settings (src/node-flags.ts) reach node by every way keygate is
 * started: the executable's shebang, `npm start`, the Dockerfile, and `--workers`.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { NODE_FLAGS, withNodeFlags } from '../../src/node-flags.js'

const root = new URL('../../', import.meta.url)
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8')

t.test('every launcher passes NODE_FLAGS to node', async (t) => {
  t.ok(NODE_FLAGS.length > 0)
  const shebang = read('src/cli/main.ts').split('\n', 1)[0] as string
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> }
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1]
  t.ok(entrypoint, 'the Dockerfile has an exec-form ENTRYPOINT')
  const docker = JSON.parse(entrypoint ?? '[]') as string[]
  for (const flag of NODE_FLAGS) {
    t.equal(shebang, `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`, 'the executable')
    t.match(pkg.scripts['start'], ` node ${NODE_FLAGS.join(' ')} dist/src/cli/main.js serve`, 'npm start')
    t.ok(docker.slice(1, docker.indexOf('dist/src/cli/main.js')).includes(flag), `the Dockerfile passes ${flag} before the script`)
  }
})

t.test('the shebang line starts node with the flags', async (t) => {
  // the shebang's command, run as the kernel would run it (through env -S), printing node's own arguments
  const command = (read('src/cli/main.ts').split('\n', 1)[0] as string).replace(/^#!/, '').split(' ')
  const probe = spawnSync(command[0] as string, [...command.slice(1), '-p', 'JSON.stringify(process.execArgv)'], { encoding: 'utf8' })
  t.equal(probe.status, 0, probe.stderr)
  t.same((JSON.parse(probe.stdout) as string[]).slice(0, NODE_FLAGS.length), NODE_FLAGS, 'node was given the flags')
})

t.test('withNodeFlags adds each flag once, and keeps an operator\'s own value', async (t) => {
  t.same(withNodeFlags([]), [...NODE_FLAGS])
  t.same(withNodeFlags(['--inspect']), ['--inspect', ...NODE_FLAGS])
  t.same(withNodeFlags([...NODE_FLAGS]), [...NODE_FLAGS], 'not twice')
  t.same(withNodeFlags(['--max-semi-space-size=32']), ['--max-semi-space-size=32'], 'the operator\'s value wins')
  t.same(withNodeFlags(['--max_semi_space_size=2']), ['--max_semi_space_size=2'], 'in either spelling')
})
