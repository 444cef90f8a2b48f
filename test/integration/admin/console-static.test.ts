/**
 * The console's static files on the admin plane (docs/console.md): a strict CSP and
 * the other security headers on every file, no inline script or style, nothing from
 * another origin, and a fixed set of files: any other /console path, traversal
 * attempts sent byte for byte over a raw socket included, gets the JSON error
 * object, never a file from elsewhere or a directory listing. The package and the
 * Docker image ship the files.
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CONSOLE_CSP } from '../../../src/admin/console.js'
import { errorBody } from '../../../src/errors.js'
import { startGateway } from '../../helpers/gateway.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

const EXPECTED_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store'
}

t.test('the CSP is the strict one the docs promise', async (t) => {
  for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
    "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'", "trusted-types 'none'"]) {
    t.ok(CONSOLE_CSP.split('; ').includes(directive), directive)
  }
  t.notMatch(CONSOLE_CSP, /unsafe-|https?:|\*|data:/, 'no unsafe-*, no other origin, no wildcard, no data:')
  const doc = readFileSync(new URL('docs/console.md', `file://${ROOT}`), 'utf8')
  t.ok(doc.includes(`| \`Content-Security-Policy\` | \`${CONSOLE_CSP}\` |`), 'docs/console.md shows this very policy')
})

t.test('console files on the admin plane', async (t) => {
  const gw = await startGateway(t, { seed: false })
  const get = async (target: string): Promise<RawResponse> => await gw.admin('GET', target)

  t.test('/console redirects to /console/ (relative, so a path prefix in front still works)', async (t) => {
    const res = await get('/console')
    t.equal(res.status, 302)
    t.equal(res.headers.location, 'console/')
  })

  const files: Array<[string, string]> = [
    ['/console/', 'text/html; charset=utf-8'],
    ['/console/index.html', 'text/html; charset=utf-8'],
    ['/console/console.css', 'text/css; charset=utf-8'],
    ['/console/main.js', 'text/javascript; charset=utf-8'],
    ['/console/icon.svg', 'image/svg+xml']
  ]
  for (const [target, type] of files) {
    t.test(`${target}: ${type}, with every security header`, async (t) => {
      const res = await get(target)
      t.equal(res.status, 200)
      t.equal(res.headers['content-type'], type)
      for (const [name, value] of Object.entries(EXPECTED_HEADERS)) t.equal(res.headers[name], value, name)
      t.ok(res.headers['x-request-id'], 'X-Request-Id')
    })
  }

  t.test('index.html: scripts only by src, no inline style or handlers, nothing from another origin', async (t) => {
    const html = (await get('/console/')).body
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)]
    t.ok(scripts.length >= 1, 'the page loads its module')
    for (const [, attrs, body] of scripts) {
      t.match(attrs, /\bsrc="[a-z-]+\.js"/, 'a same-origin src')
      t.equal(body?.trim(), '', 'no inline script body')
    }
    t.notMatch(html, /\sstyle\s*=|<style\b/i, 'no inline style (style-src self would block it)')
    t.notMatch(html, /\son[a-z]+\s*=/i, 'no inline event handlers')
    t.notMatch(html, /javascript:/i)
    for (const [, url] of html.matchAll(/\b(?:src|href|action)="([^"]*)"/gi)) {
      // (and the SSO sign-in, a same-origin route of the admin listener)
      t.match(url, /^(?:[a-z0-9-]+\.(?:js|css|svg)|sso\/login)$/, `${url ?? ''}: a console file or the SSO sign-in, same origin`)
    }
  })

  t.test('every module the console imports is served, and none reaches another origin', async (t) => {
    const seen = new Set<string>()
    const queue = ['main.js']
    while (queue.length > 0) {
      const name = queue.shift() as string
      if (seen.has(name)) continue
      seen.add(name)
      const res = await get(`/console/${name}`)
      t.equal(res.status, 200, `${name} is served`)
      // (uPlot, served from its package, names its sources in comments: the code is checked)
      const code = name === 'uplot.js' ? res.body.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '') : res.body
      // (an import or export statement's module, not any text that reads "from '")
      t.notMatch(code, /\bimport\s*\(|https?:\/\/|^\s*(?:import|export)\b[^;'"]*\bfrom\s+['"](?!\.\/)|^\s*import\s+['"](?!\.\/)/m, `${name}: only static, relative imports, no absolute URL`)
      for (const [, dep] of res.body.matchAll(/\bfrom\s+'\.\/([a-z-]+\.js)'/g)) queue.push(dep as string)
    }
    t.ok(seen.size >= 5, `the module graph was walked (${[...seen].join(', ')})`)
    const css = (await get('/console/console.css')).body
    t.notMatch(css, /@import|url\(/, 'the stylesheet loads nothing else')
  })

  t.test('any other /console path is the JSON 404; nothing else is ever read', async (t) => {
    const targets = [
      '/console/nope.js',
      '/console/index.htm',
      '/console/a/b',
      '/console/console/',
      '/console/.gitignore',
      '/console/main.js/',
      '/console//main.js',
      '/console/./main.js',
      '/console/../package.json',
      '/console/../../../../etc/passwd',
      '/console/%2e%2e/package.json',
      '/console/%2E%2E%2Fpackage.json',
      '/console/..%2Fpackage.json',
      '/console/..%5Cpackage.json',
      '/console/..\\package.json',
      '/console/%252e%252e%252fpackage.json',
      '/console/....//....//package.json',
      '/console/%2fetc%2fpasswd',
      '/console/..%2F..%2Fsrc%2Fadmin%2Fconsole.ts',
      '/console/..%2F..%2Fconsole%2Fmain.js',
      '/console/main.js%00.css'
    ]
    for (const target of targets) {
      const res = await rawRequest(gw.adminPort, `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
      t.ok(res.status === 404 || res.status === 400, `${target}: ${res.status}`)
      const code = res.status === 404 ? 'not_found' : 'bad_request'
      t.equal(res.body, errorBody(code), `${target}: the catalogue body`)
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    }
  })

  t.test('no directory listing: the directory itself is index.html, and other methods are 404', async (t) => {
    const dir = await get('/console/?C=N;O=D')
    t.equal(dir.status, 200)
    t.match(dir.body, /<title>keygate console<\/title>/)
    for (const method of ['POST', 'PUT', 'DELETE', 'PROPFIND']) {
      const res = await gw.admin(method, '/console/main.js')
      t.equal(res.status, 404, `${method} /console/main.js`)
      t.equal(res.body, errorBody('not_found'))
    }
  })
})

t.test('the package and the Docker image ship the console', async (t) => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  const packed = new Set((JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]?.files.map((f) => f.path))
  for (const file of ['console/index.html', 'console/main.js', 'console/console.css']) t.ok(packed.has(file), `npm pack includes ${file}`)
  const dockerfile = readFileSync(new URL('Dockerfile', `file://${ROOT}`), 'utf8')
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
  t.match(runtime, /^COPY console \.\/console$/m, 'the runtime stage copies console/')
})
