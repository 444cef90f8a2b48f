/**
 * `npm run test:unit`: every test/unit/**\/*.test.ts in one process. Each file run on
 * its own pays a process and the TypeScript loader (about a second apiece); together
 * they run in seconds. `npm test` still runs each file in its own process, so a unit
 * file must also pass alone, and one must not depend on another's state.
 *
 * The files register their tests on the root test while `load` runs, and those run
 * after it in file order. So a unit file must not `await` a test at its top level:
 * that test could only start once `load`, which is waiting for the file, has ended.
 */
import t from 'tap'
import { readdirSync } from 'node:fs'

const dir = new URL('./unit/', import.meta.url)
const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts')).sort()

t.test('load', async (t) => {
  for (const f of files) await import(new URL(f, dir).href)
  t.ok(files.length > 0, `${files.length} unit test files`)
})
