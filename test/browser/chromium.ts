/**
 * A real headless Chromium for the console's browser tests: Debian's `chromium`
 * package (`.ci/run` installs it), driven by playwright-core. Never a downloaded
 * browser. CHROMIUM_PATH names another binary.
 *
 * openContext gives a test a browser context whose pages wait at most PAGE_TIMEOUT_MS.
 *
 * watch(page) records what must never happen on a console page: an uncaught error,
 * a CSP or Trusted Types violation, a request to another origin, or a URL that
 * carries a secret.
 */
import { existsSync } from 'node:fs'
import type { Test } from 'tap'
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core'

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

// without the background-networking flags, Chromium's own calls home are refused on
// closed networks and slow everything down
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']

export async function launchChromium (t: Test): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`the console's browser test needs Chromium at ${CHROMIUM_PATH}: ` +
      '`apt-get install chromium` (.ci/run does this), or set CHROMIUM_PATH to a Chromium binary')
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS })
  t.teardown(async () => await browser.close())
  return browser
}

/**
 * How long a page waits for an element or a navigation before its test fails: a guard against a hang, never a
 * timing assertion (the first page of a CI run, Chromium cold on a loaded machine, has taken over 10 s to sign in and
 * list the keys)
 */
export const PAGE_TIMEOUT_MS = 30_000

/** A new context (closed when the test ends) whose pages wait at most PAGE_TIMEOUT_MS. */
export async function openContext (t: Test, browser: Browser, options: BrowserContextOptions): Promise<BrowserContext> {
  const context = await browser.newContext(options)
  t.teardown(async () => await context.close())
  context.setDefaultTimeout(PAGE_TIMEOUT_MS)
  return context
}

export interface PageWatch {
  /** uncaught errors and console messages about CSP or Trusted Types */
  problems: string[]
  /** every URL the page requested */
  requests: string[]
}

export function watch (page: Page): PageWatch {
  const w: PageWatch = { problems: [], requests: [] }
  page.on('pageerror', (err) => w.problems.push(`uncaught: ${err.message}`))
  page.on('console', (msg) => {
    if (/Content Security Policy|Trusted|Refused to/i.test(msg.text())) w.problems.push(`${msg.type()}: ${msg.text()}`)
  })
  page.on('request', (req) => w.requests.push(req.url()))
  return w
}
