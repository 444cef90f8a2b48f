// The key redactor: what counts as key-shaped, and what is left of it.
import t from 'tap'
import { createRedactor, MAX_ROUNDS, REDACTED } from '../../src/redact.js'
import { generateKey } from '../../src/registry/key-format.js'

const r = createRedactor('kg_')
const k = generateKey('kg_')
const secret = k.key.slice(3 + 17)

t.test('text: every key-shaped run becomes its id and [redacted]', async (t) => {
  const table: Array<[string, string]> = [
    [`query/${k.key}: Unexpected property`, `query/kg_${k.id}_[redacted]: Unexpected property`],
    [`body/a/${k.key}/b`, `body/a/kg_${k.id}_[redacted]/b`],
    [`${k.key} and ${k.key}`, `kg_${k.id}_[redacted] and kg_${k.id}_[redacted]`],
    [`KG_${k.key.slice(3)}`, `KG_${k.id}_[redacted]`],
    [`kg_${k.id}_${secret.slice(0, 5)}`, `kg_${k.id}_[redacted]`],
    ['body/expires_in: Expected string', 'body/expires_in: Expected string'],
    ['kg_short_x', 'kg_short_x'],
    ['no underscore at all', 'no underscore at all']
  ]
  for (const [input, output] of table) t.equal(r.text(input), output, input.slice(0, 40))
})

t.test('path: percent-encoded keys are found too; other paths are left as they are', async (t) => {
  t.equal(r.path(`/api/v1/${k.key}`), `/api/v1/kg_${k.id}_[redacted]`)
  t.equal(r.path(`/api/v1/kg%5F${k.key.slice(3)}`), `/api/v1/kg_${k.id}_[redacted]`)
  t.equal(r.path(`/api/v1/%6b${k.key.slice(1)}%zz`), `/api/v1/kg_${k.id}_[redacted]%zz`, 'a malformed escape elsewhere')
  t.equal(r.path('/api/v1/caf%C3%A9_menu'), '/api/v1/caf%C3%A9_menu', 'no key: the path as received')
  const hex = [...Buffer.from(k.key)].map((b) => '%' + b.toString(16)).join('')
  t.equal(r.path(`/api/v1/%C3${hex}`), `/api/v1/%C3kg_${k.id}_[redacted]`,
    'a key encoded behind an escape that is not UTF-8')
  t.equal(r.path('/api/v1/%C3%6d%65%6e%75'), '/api/v1/%C3%6d%65%6e%75', 'no key behind it: the path as received')
  t.equal(r.path(`/api/v1/${k.key}${k.key}`), `/api/v1/kg_${k.id}_[redacted]kg_${k.id}_[redacted]`,
    'two keys run together')
  t.equal(r.path('/api/v1/users'), '/api/v1/users')
})

t.test('another prefix', async (t) => {
  const other = createRedactor('acme_')
  const key = generateKey('acme_').key
  t.notOk(other.text(`x ${key}`).includes(key.slice(-20)))
  t.equal(other.text(k.key), k.key, 'kg_ is not its shape')
})

t.test('any depth of percent-encoding, up to MAX_ROUNDS decodes; deeper is redacted whole', async (t) => {
  const once = `kg%5F${k.key.slice(3)}`
  const deeper = (n: number): string => {
    let s = once
    for (let i = 1; i < n; i++) s = s.replace(/%/g, '%25')
    return s
  }
  for (let depth = 1; depth <= MAX_ROUNDS; depth++) {
    t.equal(r.path(`/api/v1/${deeper(depth)}`), `/api/v1/kg_${k.id}_[redacted]`, `path, encoded ${depth} times`)
    t.equal(r.text(`querystring/${deeper(depth)}: Unexpected property`),
      `querystring/kg_${k.id}_[redacted]: Unexpected property`,
      `text, encoded ${depth} times`)
  }
  t.equal(r.path(`/api/v1/${deeper(MAX_ROUNDS + 1)}`), REDACTED, 'still changing after the last round: fail closed')
  t.equal(r.path('/api/v1/a%2525b'), '/api/v1/a%2525b', 'no key, however encoded: as received')
  t.equal(r.text(`50%25 of ${k.key.replace('_', '%255F')}`), `50% of kg_${k.id}_[redacted]`,
    'a text around a key is written decoded')
})
