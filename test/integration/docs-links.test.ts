/**
 * Every relative link in the repository's Markdown points at a file that exists, and
 * every `#anchor` at a heading of its target (GitHub's slugs, github-slugger: the
 * same heading twice gets `-1`, `-2`, ...). External links (`http:`, `mailto:`) are
 * not followed.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import GithubSlugger from 'github-slugger'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SKIP = new Set(['node_modules', '.git', 'dist', '.tap', '.scratch', 'coverage'])

function markdownFiles (dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...markdownFiles(path))
    else if (entry.name.endsWith('.md')) out.push(path)
  }
  return out
}

/** The text outside fenced code blocks (links and headings inside them are examples). */
function prose (text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '')
}

const anchorCache = new Map<string, Set<string>>()
function anchorsOf (file: string): Set<string> {
  let anchors = anchorCache.get(file)
  if (anchors !== undefined) return anchors
  const slugger = new GithubSlugger()
  anchors = new Set()
  for (const m of prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    // the heading's text as GitHub renders it: inline code and emphasis marks dropped, link text kept
    const text = (m[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '')
    anchors.add(slugger.slug(text))
  }
  for (const m of readFileSync(file, 'utf8').matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1] as string)
  anchorCache.set(file, anchors)
  return anchors
}

/** [text](target) and [text]: target reference definitions, relative ones only. */
function links (text: string): string[] {
  const body = prose(text).replace(/`[^`\n]*`/g, '')
  const targets = [
    ...[...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string),
    ...[...body.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1] as string)
  ]
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}

const files = markdownFiles(ROOT)

t.ok(files.length > 5, `found the repository's Markdown (${files.length} files)`)

for (const file of files) {
  const name = relative(ROOT, file)
  t.test(name, async (t) => {
    const broken: string[] = []
    for (const target of links(readFileSync(file, 'utf8'))) {
      const [pathPart = '', anchor] = target.split('#', 2)
      const path = decodeURIComponent(pathPart)
      const targetFile = path === '' ? file : resolve(dirname(file), path)
      if (!existsSync(targetFile)) {
        broken.push(`${target}: no such file`)
        continue
      }
      if (anchor === undefined || anchor === '') continue
      if (statSync(targetFile).isDirectory() || !targetFile.endsWith('.md')) {
        if (!/^L[0-9]+(-L[0-9]+)?$/.test(anchor)) broken.push(`${target}: an anchor into a file that is not Markdown`)
        continue
      }
      if (!anchorsOf(targetFile).has(decodeURIComponent(anchor))) broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, targetFile)}`)
    }
    t.same(broken, [], 'every relative link resolves')
  })
}
