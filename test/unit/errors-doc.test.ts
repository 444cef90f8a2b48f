import t from 'tap'
import { readFileSync } from 'node:fs'
import { ERRORS, errorBody } from '../../src/errors.js'

t.test('docs/errors.md lists exactly the catalogue of src/errors.ts', async (t) => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  const table = doc.split('<!-- errors-table:start')[1]?.split('<!-- errors-table:end')[0] ?? ''
  const rows = [...table.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \| (.+) \|$/gm)].map((m) => ({ status: Number(m[1]), code: m[2], message: m[3] }))
  const catalogue = Object.entries(ERRORS).map(([code, e]) => ({ status: e.status, code, message: e.message }))
  const byStatus = (a: { status: number }, b: { status: number }): number => a.status - b.status
  t.same(rows.sort(byStatus), catalogue.sort(byStatus))
})

t.test('each body is the error object with status equal to the HTTP status', async (t) => {
  for (const [code, e] of Object.entries(ERRORS)) {
    t.same(JSON.parse(errorBody(code as keyof typeof ERRORS)), { error: { code, message: e.message, status: e.status } })
  }
})
