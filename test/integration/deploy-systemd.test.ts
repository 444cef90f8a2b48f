/**
 * deploy/systemd/keygate.service (docs/deploy.md), read: it runs `keygate serve --config`,
 * hardened (a dynamic user, a read-only system, no capability, no new privileges), waits
 * longer than the gateway's grace before SIGKILL, and `systemd-analyze` rates it.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { parseConfig } from '../../src/config/load.js'

const path = fileURLToPath(new URL('../../deploy/systemd/keygate.service', import.meta.url))
const text = readFileSync(path, 'utf8')
/** every `Name=value` of the [Service] section (a name may repeat) */
const service = new Map<string, string[]>()
const section = text.slice(text.indexOf('[Service]'), text.indexOf('[Install]'))
for (const line of section.split('\n')) {
  const m = /^(\w+)=(.*)$/.exec(line)
  if (m !== null) service.set(m[1] as string, [...(service.get(m[1] as string) ?? []), m[2] as string])
}
const one = (name: string): string | undefined => service.get(name)?.[0]

t.test('it runs keygate serve with the config file, the secrets from an env file', async (t) => {
  t.equal(one('ExecStart'), '/usr/local/bin/keygate serve --config /etc/keygate/keygate.yaml')
  t.equal(one('EnvironmentFile'), '/etc/keygate/keygate.env')
  t.equal(one('Type'), 'exec', 'a failed exec fails the start')
  t.equal(one('KillSignal'), 'SIGTERM')
  const grace = parseConfig('{}', {}, 'defaults', { forServing: false }).shutdown_grace_ms
  const stopS = Number(/^(\d+)s$/.exec(one('TimeoutStopSec') ?? '')?.[1])
  t.ok(stopS * 1000 > grace, `systemd waits ${stopS} s, longer than the ${grace} ms grace`)
})

t.test('hardened', async (t) => {
  const expected: Record<string, string> = {
    DynamicUser: 'yes',
    ProtectSystem: 'strict',
    ProtectHome: 'yes',
    PrivateTmp: 'yes',
    NoNewPrivileges: 'yes',
    CapabilityBoundingSet: '',
    RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
    SystemCallFilter: '@system-service'
  }
  for (const [name, value] of Object.entries(expected)) t.equal(one(name), value, name)
  t.notOk(service.has('MemoryDenyWriteExecute'), 'not MemoryDenyWriteExecute (V8\'s JIT)')
  t.notOk(service.has('User'), 'no fixed user: a dynamic one')
})

t.test('systemd-analyze rates its exposure low', async (t) => {
  const { stdout } = await promisify(execFile)('systemd-analyze', ['security', '--offline=yes', path])
  const level = Number(/Overall exposure level for keygate\.service: ([\d.]+)/.exec(stdout)?.[1])
  t.ok(level <= 2, `exposure ${level} (0 best, 10 worst; docs/deploy.md says 1.7)`)
})
