// The cost of one signed identity assertion, in-process, for both algorithms:
// `taskset -c 1 node bench/dist/assertion-signing.js`. It compares jose's CompactSign
// (the header re-serialised per token, asynchronous WebCrypto) with node:crypto's
// sign() over a precomputed `base64url(header).base64url(claims)` input (what
// src/assertion/assertions.ts does), and times the gateway's whole token.
// Reported per token: wall time (one at a time) and CPU time (every thread).
import { createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto'
import { CompactSign, importPKCS8 } from 'jose'
import { createAssertions } from '@keygate/gateway/dist/assertion/assertions.js'
import { identityClaims, issuerClaim, requestClaims } from '@keygate/gateway/dist/assertion/claims.js'
import type { AssertionAlg } from '@keygate/gateway/dist/config/assertion-key-files.js'
import type { Identity } from '@keygate/gateway/dist/decision/identity.js'
import { NO_GRANTS } from '@keygate/gateway/dist/registry/records.js'

const N = Number(process.env.N ?? 20_000)
const identity: Identity = {
  keyId: 'AbCdEfGh12345678', type: 'personal', userId: 'alice', org: 'acme', role: 'reader', grants: NO_GRANTS
}
const requestId = randomUUID()
const iss = issuerClaim('keygate')
const claims = (): string => {
  const iat = Math.floor(Date.now() / 1000)
  return requestClaims(iss, identityClaims(identity), 'GET', '/api/v1/users', requestId, iat, iat + 60)
}

async function measure (name: string, fn: () => unknown): Promise<void> {
  for (let i = 0; i < N / 10; i++) await fn()
  const cpu = process.cpuUsage()
  const start = process.hrtime.bigint()
  for (let i = 0; i < N; i++) await fn()
  const wall = Number(process.hrtime.bigint() - start) / N / 1000
  const used = process.cpuUsage(cpu)
  const cpuUs = (used.user + used.system) / N
  process.stdout.write(
    `${name.padEnd(58)} ${wall.toFixed(2).padStart(7)} us wall ${cpuUs.toFixed(2).padStart(7)} us CPU\n`
  )
}

async function run (alg: AssertionAlg, privateKey: KeyObject): Promise<void> {
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const cryptoKey = await importPKCS8(pem, alg)
  const header = { alg, kid: 'kid', typ: 'JWT' }
  const head = Buffer.from(JSON.stringify(header)).toString('base64url') + '.'
  const encoder = new TextEncoder()
  const es256 = { key: privateKey, dsaEncoding: 'ieee-p1363' as const }
  const nodeSign = alg === 'EdDSA'
    ? (input: Buffer) => sign(null, input, privateKey)
    : (input: Buffer) => sign('sha256', input, es256)
  const assertions = await createAssertions(
    { enabled: true, issuer: 'keygate', ttl_s: 60, bind: 'request', previous_key_files: [] },
    { alg, privateKey, publicKeys: [{ alg, key: createPublicKey(privateKey) }] }
  )

  process.stdout.write(`\n${alg}\n`)
  await measure('claims JSON only', claims)
  await measure('jose CompactSign (CryptoKey), awaited one at a time', async () =>
    await new CompactSign(encoder.encode(claims())).setProtectedHeader(header).sign(cryptoKey))
  await measure('jose CompactSign (KeyObject), awaited one at a time', async () =>
    await new CompactSign(encoder.encode(claims())).setProtectedHeader(header).sign(privateKey))
  await measure('node:crypto sign() on the precomputed input', () => {
    const input = head + Buffer.from(claims()).toString('base64url')
    return input + '.' + nodeSign(Buffer.from(input, 'latin1')).toString('base64url')
  })
  const reused = await createAssertions(
    { enabled: true, issuer: 'keygate', ttl_s: 60, bind: 'identity', previous_key_files: [] },
    { alg, privateKey, publicKeys: [{ alg, key: createPublicKey(privateKey) }] }
  )
  if (assertions === undefined || reused === undefined) throw new Error('assertions are on')
  await measure('keygate forRequest() (bind: request)', () =>
    assertions.forRequest(identity, 'GET', '/api/v1/users', requestId, Date.now()))
  await measure('keygate forRequest() (bind: identity, token reused)', () =>
    reused.forRequest(identity, 'GET', '/api/v1/users', requestId, Date.now()))
}

process.stdout.write(`node ${process.version}, ${N} tokens per row\n`)
await run('EdDSA', generateKeyPairSync('ed25519').privateKey)
await run('ES256', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey)
