/**
 * docker-compose.yml, read (no Docker engine needed): the admin listener is reachable
 * from the compose network and published on the host's loopback only, the data plane
 * on :8080, and a Prometheus scrape of the admin listener is shown, commented.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { parseConfig } from '../../src/config/load.js'

const text = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8')
const compose = parse(text) as { services: Record<string, { environment?: Record<string, string>, ports?: string[] }> }
const keygate = compose.services.keygate

t.test('the admin listener: every container address, the host loopback only', async (t) => {
  t.equal(keygate?.environment?.KEYGATE_ADMIN_LISTEN, '0.0.0.0:8081', 'reachable from the compose network')
  const ports = keygate?.ports ?? []
  t.ok(ports.includes('127.0.0.1:8081:8081'), 'published on the host\'s loopback')
  t.same(ports.filter((p) => p.endsWith(':8081')), ['127.0.0.1:8081:8081'], 'and nowhere else')
  t.ok(ports.includes('8080:8080'), 'the data plane on :8080')
})

/** The environment as docker compose interpolates it (`${NAME:-default}`) from the shell's or .env's `vars`. */
function interpolated (vars: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(keygate?.environment ?? {}).map(([name, value]) =>
    [name, String(value).replace(/\$\{(\w+):-([^}]*)\}/g, (_all, v: string, fallback: string) => vars[v] ?? fallback)]))
}

t.test('the compose configuration with the compose environment is valid', async (t) => {
  const file = readFileSync(new URL('../../config/keygate.compose.yaml', import.meta.url), 'utf8')
  const config = parseConfig(file, interpolated({}), 'keygate.compose.yaml')
  t.equal(config.admin_listen, '0.0.0.0:8081')
  t.equal(config.listen, '0.0.0.0:8080')
})

t.test('the admin token comes from the shell or .env, never from the file', async (t) => {
  t.equal(keygate?.environment?.KEYGATE_ADMIN_TOKEN, '$' + '{KEYGATE_ADMIN_TOKEN:-}', 'interpolated, empty when unset')
  const file = readFileSync(new URL('../../config/keygate.compose.yaml', import.meta.url), 'utf8')
  const token = 'a'.repeat(64)
  const env = interpolated({ KEYGATE_ADMIN_TOKEN: token })
  t.equal(env.KEYGATE_ADMIN_TOKEN, token, 'set: passed to keygate')
  t.equal(parseConfig(file, env, 'keygate.compose.yaml').admin_token, token, 'and taken as the admin token')
  t.equal(interpolated({}).KEYGATE_ADMIN_TOKEN, '', 'unset: empty')
  t.equal(parseConfig(file, interpolated({}), 'keygate.compose.yaml').admin_token, undefined, 'token sign-in off')
  t.notMatch(text, /KEYGATE_ADMIN_TOKEN:\s*["']?[A-Za-z0-9]{16,}/, 'no token written in the file')
})

t.test('the header says how to make the first admin and set the token', async (t) => {
  t.match(text, /dist\/cli\/main\.js init/, 'keygate init')
  t.match(text, /openssl rand -hex 32/, 'how to make a token')
})

t.test('a commented Prometheus scrape of keygate:8081', async (t) => {
  t.notOk('prometheus' in compose.services, 'commented out, not run by default')
  t.match(text, /^\s*#\s+- targets: \["keygate:8081"\]/m, 'the scrape target is the admin listener on the compose network')
})
