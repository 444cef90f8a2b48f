/**
 * The Integrations console at /console: a static front end (console/ at the package
 * root: plain HTML, CSS and ES modules, no build step) that calls /admin/v1 with the
 * credential the user signs in with. Reference: docs/console.md.
 *
 * The files are read once, at start-up, into a fixed table; a request can only ever
 * name one of those entries. No path reaches the file system, so there is no
 * traversal and no directory listing to defend, and anything else under /console is
 * the JSON 404. Every console response carries a strict Content-Security-Policy
 * (no inline script or style, nothing from another origin, Trusted Types on).
 * The charts' library, uPlot (an npm dependency, pinned), is served from this origin
 * too, as `uplot.js` and `uplot.css`, read from its package: no CDN.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import { sendError } from '../errors.js'
import type { AdminPlaneOptions } from './options.js'

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'"
].join('; ')

/** Set on every console response (the admin plane adds Cache-Control: no-store and X-Request-Id). */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin'
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png'
}

interface Asset {
  body: Buffer
  contentType: string
}

export const consolePlugin: FastifyPluginAsync<AdminPlaneOptions> = async (app) => {
  const assets = loadAssets(consoleDir())
  for (const [name, asset] of chartAssets()) assets.set(name, asset)
  const index = assets.get('index.html')
  if (index === undefined) throw new Error('console/index.html is missing from the package')

  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS)
    done()
  })

  // /console -> console/ (relative, so the console also works behind a path prefix)
  app.get('/', { prefixTrailingSlash: 'no-slash' }, (_request, reply) =>
    reply.code(302).header('location', 'console/').send())
  app.get('/', { prefixTrailingSlash: 'slash' }, (_request, reply) => reply.type(index.contentType).send(index.body))
  app.get('/:file', (request, reply) => {
    const asset = assets.get((request.params as { file: string }).file)
    if (asset === undefined) return sendError(reply, 'not_found')
    return reply.type(asset.contentType).send(asset.body)
  })
}

/** console/ beside src/ (running from source) and dist/ (running the build): two levels up from either. */
function consoleDir (): string {
  const dir = fileURLToPath(new URL('../../console', import.meta.url))
  if (existsSync(join(dir, 'index.html'))) return dir
  throw new Error('the console/ directory is missing from the package')
}

/** uPlot's ES module and style sheet, from its package (node_modules/uplot/dist). */
function chartAssets (): Map<string, Asset> {
  const dist = dirname(createRequire(import.meta.url).resolve('uplot'))
  return new Map([
    ['uplot.js', { body: readFileSync(join(dist, 'uPlot.esm.js')), contentType: CONTENT_TYPES['.js'] as string }],
    ['uplot.css', { body: readFileSync(join(dist, 'uPlot.min.css')), contentType: CONTENT_TYPES['.css'] as string }]
  ])
}

/** Every regular file of a known type directly in `dir`, by name (no subdirectories, no dotfiles). */
function loadAssets (dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(dir)) {
    const contentType = CONTENT_TYPES[extname(name)]
    const path = join(dir, name)
    if (contentType === undefined || name.startsWith('.') || !statSync(path).isFile()) continue
    assets.set(name, { body: readFileSync(path), contentType })
  }
  return assets
}
