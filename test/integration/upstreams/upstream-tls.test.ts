/**
 * Upstream TLS (docs/routing.md): an `https://` upstream's
 * certificate is verified (the system's CAs, or `ca_file`), for the URL's host or
 * `servername`; `client_cert_file` and `client_key_file` answer an upstream that
 * requires a client certificate (mTLS); SIGHUP re-reads the files. A refused
 * certificate is a 502 and a warning in the log. Certificates made by openssl
 * (test/helpers/test-ca.ts); real HTTPS upstreams on real ports.
 */
import { copyFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import { startGateway, eventually, type TestGateway } from '../../helpers/gateway.js'
import { makeTestCa, SERVER_NAME, startHttpsUpstream } from '../../helpers/test-ca.js'
import { targetsUp } from '../../helpers/targets.js'
import { reloadUpstreamTls } from '../../../src/server.js'

const BAD_GATEWAY = { error: { code: 'bad_gateway', message: 'Upstream service unavailable', status: 502 } }

function verifiedBy (url: string, caFile: string): string {
  return `url: "${url}", ca_file: "${caFile}", servername: ${SERVER_NAME}`
}

function upstreamYaml (fields: string): string {
  return `upstreams:
  core: { ${fields}, timeout_ms: 2000, connect_timeout_ms: 1000 }
rules:
  - { method: GET, path: /api/v1/open/*, permissions: [] }
`
}

async function getOpen (gw: TestGateway): Promise<{ status: number, body: string }> {
  const key = (await gw.fixtures.personalKey('alice')).key
  return await gw.get('/api/v1/open/x', key)
}

function refusedCertificateLogged (gw: TestGateway): boolean {
  return gw.logs.some((l) => l.msg === 'upstream connection failed' && l.upstream === 'core' &&
    typeof l.code === 'string' && l.code !== '')
}

t.test('verified with ca_file and servername: the request goes through', async (t) => {
  const ca = makeTestCa(t)
  const url = await startHttpsUpstream(t, ca, false)
  const gw = await startGateway(t, { yaml: upstreamYaml(verifiedBy(url, ca.caFile)) })
  const res = await getOpen(gw)
  t.equal(res.status, 200)
  t.same(JSON.parse(res.body), { client: null }, 'no client certificate unless configured')
})

t.test('servername with a URL that names a host: the server name sent and verified is servername, the Host header the URL\'s', async (t) => {
  const ca = makeTestCa(t)
  const port = new URL(await startHttpsUpstream(t, ca, false)).port
  const url = `https://localhost:${port}`
  for (const shape of ['url', 'targets'] as const) {
    await t.test(`an upstream with ${shape}`, async (t) => {
      const origin = shape === 'url' ? `url: "${url}"` : `targets: ["${url}"]`
      const gw = await startGateway(t, { yaml: upstreamYaml(`${origin}, ca_file: "${ca.caFile}", servername: ${SERVER_NAME}`) })
      const key = (await gw.fixtures.personalKey('alice')).key
      const res = await gw.get('/api/v1/open/x', key)
      t.equal(res.status, 200, 'verified against servername')
      t.equal(res.headers['x-seen-sni'], SERVER_NAME, 'servername sent as SNI')
      t.equal(res.headers['x-seen-host'], `localhost:${port}`, 'the URL\'s host as Host, not the client\'s')
    })
  }
})

t.test('servername with a URL that names a host: the health check is verified against servername too', async (t) => {
  const ca = makeTestCa(t)
  const seen: string[] = []
  const port = new URL(await startHttpsUpstream(t, ca, false, seen)).port
  const check = 'health_check: { path: /health, interval: 100ms, timeout: 90ms, unhealthy_after: 1, healthy_after: 1 }'
  const gw = await startGateway(t, {
    yaml: upstreamYaml(`targets: ["https://localhost:${port}"], ca_file: "${ca.caFile}", servername: ${SERVER_NAME}, ${check}`)
  })
  const checks = (): number => seen.filter((p) => p === '/health').length
  const target = `https://localhost:${port}`
  const up = async (): Promise<number | undefined> => (await targetsUp(gw.app.metrics.registry, 'core'))[target]
  // three checks answered, or the target marked down (a check refused the certificate)
  await eventually(async () => checks() >= 3 || (await up()) === 0, 5000)
  t.ok(checks() >= 3, `the checks reached the upstream over verified TLS (${checks()})`)
  t.equal(await up(), 1, 'the target is up')
  t.equal((await getOpen(gw)).status, 200)
})

t.test('refused: a certificate for another name, or from another CA, or with no ca_file (system CAs)', async (t) => {
  const ca = makeTestCa(t)
  const url = await startHttpsUpstream(t, ca, false)
  const cases = {
    'the URL host is not the certificate name': `url: "${url}", ca_file: "${ca.caFile}"`,
    'the wrong CA': `url: "${url}", ca_file: "${ca.wrongCaFile}", servername: ${SERVER_NAME}`,
    'the system CAs': `url: "${url}", servername: ${SERVER_NAME}`
  }
  for (const [name, fields] of Object.entries(cases)) {
    await t.test(name, async (t) => {
      const gw = await startGateway(t, { yaml: upstreamYaml(fields) })
      const res = await getOpen(gw)
      t.equal(res.status, 502)
      t.same(JSON.parse(res.body), BAD_GATEWAY)
      t.not(await eventually(async () => refusedCertificateLogged(gw)), -1, 'the refusal is logged with its code')
    })
  }
})

t.test('mTLS: an upstream that requires a client certificate gets the configured one', async (t) => {
  const ca = makeTestCa(t)
  const url = await startHttpsUpstream(t, ca, true)
  await t.test('without one: 502', async (t) => {
    const gw = await startGateway(t, { yaml: upstreamYaml(verifiedBy(url, ca.caFile)) })
    t.equal((await getOpen(gw)).status, 502)
  })
  await t.test('with client_cert_file and client_key_file: through, as keygate-client', async (t) => {
    const fields = `${verifiedBy(url, ca.caFile)}, client_cert_file: "${ca.clientCertFile}", ` +
      `client_key_file: "${ca.clientKeyFile}"`
    const gw = await startGateway(t, { yaml: upstreamYaml(fields) })
    const res = await getOpen(gw)
    t.equal(res.status, 200)
    t.same(JSON.parse(res.body), { client: 'keygate-client' })
  })
})

t.test('SIGHUP re-reads ca_file: a CA replaced in its file is used for new connections', async (t) => {
  const ca = makeTestCa(t)
  const url = await startHttpsUpstream(t, ca, false)
  const file = `${ca.dir}/rotated-ca.pem`
  for (const shape of ['url', 'targets'] as const) {
    await t.test(`an upstream with ${shape}`, async (t) => {
      copyFileSync(ca.wrongCaFile, file)
      const origin = shape === 'url' ? `url: "${url}"` : `targets: ["${url}"]`
      const fields = `${origin}, ca_file: "${file}", servername: ${SERVER_NAME}`
      const gw = await startGateway(t, { yaml: upstreamYaml(fields) })
      t.equal((await getOpen(gw)).status, 502, 'refused with the old CA')
      copyFileSync(ca.caFile, file)
      reloadUpstreamTls(gw.app)
      t.ok(gw.logs.some((l) => l.msg === 'SIGHUP: upstream TLS files re-read'), 'logged')
      t.equal((await getOpen(gw)).status, 200, 'verified with the new one')
    })
  }
  await t.test('a file that cannot be used changes nothing', async (t) => {
    copyFileSync(ca.caFile, file)
    const gw = await startGateway(t, { yaml: upstreamYaml(verifiedBy(url, file)) })
    t.equal((await getOpen(gw)).status, 200)
    writeFileSync(file, 'not a certificate\n')
    reloadUpstreamTls(gw.app)
    const refused = 'SIGHUP: upstream TLS files not usable; the previous ones stay in use'
    t.ok(gw.logs.some((l) => l.msg === refused), 'logged as an error')
    t.equal((await getOpen(gw)).status, 200, 'the previous CA still verifies')
  })
})
