/**
 * The demo's upstream: a tiny backend that trusts the identity headers keygate
 * sets. `GET /api/v1/users` lists users; every other path echoes what it received.
 * Run alone with `node dist/demo/upstream.js` (PORT, default 3000).
 */
import { createServer, type Server } from 'node:http'
import { fileURLToPath } from 'node:url'

export function createDemoUpstream (): Server {
  return createServer((req, res) => {
    const caller = {
      key_id: req.headers['x-auth-key-id'],
      key_type: req.headers['x-auth-key-type'],
      user_id: req.headers['x-auth-user-id'],
      org_id: req.headers['x-auth-org-id'],
      role: req.headers['x-auth-role'],
      anonymous: req.headers['x-auth-anonymous']
    }
    const body = req.method === 'GET' && req.url === '/api/v1/users'
      ? { users: [{ id: 'alice', name: 'Alice' }, { id: 'bob', name: 'Bob' }], caller }
      : { method: req.method, path: req.url, caller }
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify(body) + '\n')
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.env.PORT ?? 3000)
  createDemoUpstream().listen(port, process.env.HOST ?? '0.0.0.0', () => {
    process.stdout.write(`demo upstream listening on ${port}\n`)
  })
}
