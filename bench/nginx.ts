// nginx in front of the keygate authorizer, as a server under test: docs/authorizer.md's
// nginx configuration (auth_request, keep-alive to keygate and to the backend), its
// addresses replaced by the bench's, as test/integration/authorizer/nginx-authorizer.test.ts runs
// it. One worker process, pinned with keygate to the server core: the pair gets the
// one core keygate's own proxy gets (docs/benchmarks.md, Method). Also nginx alone,
// the same proxying without auth_request: what the ingress costs before it asks.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from './port.js'
import { spawnServer, type ChildServer } from './process.js'
import { BENCH_PATH } from './servers.js'

/** the page whose ```nginx block is the configuration */
const DOC = fileURLToPath(new URL('../../docs/authorizer.md', import.meta.url))
const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx']

function nginxBinary (): string {
  const found = CANDIDATES.find((p) => existsSync(p))
  if (found !== undefined) return found
  throw new Error('nginx not found: install Debian\'s nginx package (`apt-get install -y nginx`)')
}

/** docs/authorizer.md's nginx block, pointed at this keygate, this backend and this port. */
export function configFromDocs (authzPort: number, backendPort: number, port: number): string {
  const match = /```nginx\n([\s\S]*?)\n```/.exec(readFileSync(DOC, 'utf8'))
  if (match?.[1] === undefined) throw new Error(`${DOC}: no \`\`\`nginx block`)
  let conf = match[1]
  for (const [from, to] of [
    ['server 127.0.0.1:8082;', `server 127.0.0.1:${authzPort};`],
    ['server 127.0.0.1:3000;', `server 127.0.0.1:${backendPort};`],
    ['listen 127.0.0.1:8000;', `listen 127.0.0.1:${port};`]
  ] as const) {
    if (!conf.includes(from)) throw new Error(`docs/authorizer.md's nginx block no longer has "${from}"`)
    conf = conf.replace(from, to)
  }
  return conf
}

/** The documentation's proxying (keep-alive to the backend) without auth_request. */
function plainProxy (backendPort: number, port: number): string {
  return `
upstream backend {
    server 127.0.0.1:${backendPort};
    keepalive 64;
}
server {
    listen 127.0.0.1:${port};
    location /api/ {
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass http://backend;
    }
}`
}

/**
 * nginx, a master and one worker (all on `cpus`): with `authzPort`, the documented
 * configuration, ready once a request without a key comes back as keygate's 401
 * through it (with `readyStatus`, another authorizer's answer); without, the plain
 * proxy, ready once a request comes back from the origin.
 */
export async function startNginx (
  authzPort: number | undefined, originUrl: string, cpus: string | undefined, readyStatus?: number
): Promise<ChildServer> {
  const port = await freePort()
  const backendPort = Number(new URL(originUrl).port)
  return await startCustomNginx({
    port,
    http: authzPort === undefined ? plainProxy(backendPort, port) : configFromDocs(authzPort, backendPort, port),
    readyUrl: `http://127.0.0.1:${port}${BENCH_PATH}`,
    readyStatus: readyStatus ?? (authzPort === undefined ? 200 : 401),
    cpus
  })
}

export interface CustomNginx {
  port: number
  /** the http block's configuration, given the run's directory (for files written there) */
  http: string | ((dir: string) => string)
  /** main-context directives (load_module) */
  main?: string
  /** files written into the run's directory first, by name */
  files?: Record<string, string>
  readyUrl: string
  readyStatus: number
  cpus: string | undefined
}

/** nginx, a master and one worker (all on `cpus`), with the bench's common http settings and `o.http`. */
export async function startCustomNginx (o: CustomNginx): Promise<ChildServer> {
  const bin = nginxBinary()
  const dir = mkdtempSync(join(tmpdir(), 'keygate-bench-nginx-'))
  // run as root, the master starts its worker as `nobody`, which must reach the temp paths
  chmodSync(dir, 0o755)
  for (const [name, text] of Object.entries(o.files ?? {})) writeFileSync(join(dir, name), text, { mode: 0o644 })
  const conf = join(dir, 'nginx.conf')
  writeFileSync(conf, `${o.main ?? ''}
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  # one log line per request in both setups: keygate's decision line here, as keygate's
  # request line on its own proxy
  access_log off;
  # node keeps a client's keep-alive connection for any number of requests; nginx's
  # default (1,000) would make the load generator reconnect every few hundred ms
  keepalive_requests 1000000;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${typeof o.http === 'string' ? o.http : o.http(dir)}
}
`)
  const check = spawnSync(bin, ['-t', '-p', dir, '-c', conf], { encoding: 'utf8' })
  if (check.status !== 0) throw new Error(`nginx -t refused the configuration:\n${check.stderr}`)
  const errors = (): string =>
    existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8').slice(-4096) : ''
  let server: ChildServer
  try {
    server = await spawnServer({
      name: 'nginx',
      command: bin,
      args: ['-p', dir, '-c', conf],
      cpus: o.cpus,
      port: o.port,
      readyUrl: o.readyUrl,
      isReady: (status) => status === o.readyStatus
    })
  } catch (err: unknown) {
    const log = errors()
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nnginx error log:\n${log}`)
  }
  return {
    ...server,
    output: () => server.output() + errors(),
    async stop () {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
