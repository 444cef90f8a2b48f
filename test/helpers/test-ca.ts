/**
 * Certificates for upstream TLS tests, made by the `openssl` binary in a temporary
 * directory removed with the test: a CA, a server certificate it signed (for the DNS
 * name `upstream.test` only), a client certificate it signed (CN `keygate-client`), and
 * a second, unrelated CA (the wrong one); and an HTTPS upstream using them.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

export interface TestCa {
  dir: string
  /** file names */
  caFile: string
  wrongCaFile: string
  clientCertFile: string
  clientKeyFile: string
  /** PEM contents */
  ca: Buffer
  wrongCa: Buffer
  serverCert: Buffer
  serverKey: Buffer
}

export const SERVER_NAME = 'upstream.test'

export function makeTestCa (t: Test): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-ca-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const at = (name: string): string => join(dir, name)
  const ssl = (...args: string[]): void => { execFileSync('openssl', args, { stdio: 'pipe' }) }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  const selfSigned = (name: string, cn: string): void => {
    const files = ['-keyout', at(`${name}.key`), '-out', at(`${name}.pem`)]
    ssl('req', '-x509', ...ec, ...files, '-days', '2', '-subj', `/CN=${cn}`)
  }
  selfSigned('ca', 'keygate test CA')
  selfSigned('wrong-ca', 'another CA')
  const signed = (name: string, cn: string, ext: string): void => {
    ssl('req', ...ec, '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`), '-subj', `/CN=${cn}`)
    writeFileSync(at(`${name}.ext`), ext)
    ssl('x509', '-req', '-in', at(`${name}.csr`), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial',
      '-out', at(`${name}.pem`), '-days', '2', '-extfile', at(`${name}.ext`))
  }
  signed('server', SERVER_NAME, `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`)
  signed('client', 'keygate-client', 'extendedKeyUsage=clientAuth\n')
  return {
    dir,
    caFile: at('ca.pem'),
    wrongCaFile: at('wrong-ca.pem'),
    clientCertFile: at('client.pem'),
    clientKeyFile: at('client.key'),
    ca: readFileSync(at('ca.pem')),
    wrongCa: readFileSync(at('wrong-ca.pem')),
    serverCert: readFileSync(at('server.pem')),
    serverKey: readFileSync(at('server.key'))
  }
}

/**
 * An HTTPS upstream with the server certificate, answering every request with
 * `{ client }`: the CN of the client certificate it was shown, if any, and the Host header
 * and server name (SNI) it was sent as `x-seen-host` and `x-seen-sni`; `seen` collects the
 * paths of the requests it answered (so, over TLS verified by the sender). Its URL is
 * `https://127.0.0.1:<port>` (the certificate names SERVER_NAME only).
 */
export async function startHttpsUpstream (
  t: Test, ca: TestCa, requireClientCert: boolean, seen?: string[]
): Promise<string> {
  const server: Server = createServer({
    key: ca.serverKey,
    cert: ca.serverCert,
    ca: ca.ca,
    requestCert: requireClientCert,
    rejectUnauthorized: requireClientCert
  }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate()
    const client = peer?.subject?.CN ?? null
    seen?.push(req.url ?? '')
    res.writeHead(200, {
      'content-type': 'application/json',
      // what the gateway sent: the Host header and the TLS server name (SNI)
      'x-seen-host': req.headers.host ?? '',
      'x-seen-sni': String((req.socket as TLSSocket).servername ?? '')
    }).end(JSON.stringify({ client }))
  })
  server.on('tlsClientError', () => {})
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`
}
