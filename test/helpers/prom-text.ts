/**
 * A strict parser for the Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), for tests of /metrics.
 *
 * It throws, naming the line, on anything a Prometheus server would reject or that
 * the format forbids: a malformed sample line (metric name, label names, quoting and
 * escapes, the value, an optional integer timestamp), a HELP or TYPE line given twice
 * or a TYPE after the family's first sample, an unknown type, a family whose samples
 * are not contiguous, a series given twice, and histograms whose buckets are not
 * cumulative, lack `+Inf`, or disagree with `_count`, or lack `_sum`.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'

export interface PromSample {
  /** the sample's own name (`x_bucket`, `x_sum`...) */
  name: string
  labels: Record<string, string>
  value: number
  /** 1-based line number */
  line: number
}

export interface PromFamily {
  name: string
  help?: string
  type: MetricType
  samples: PromSample[]
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*'
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const METRIC_NAME = new RegExp(`^${NAME}$`)
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
// as Prometheus reads values (Go's strconv.ParseFloat): NaN and Inf in any case (prom-client writes `Nan`)
const FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$/i

export class PromParseError extends Error {
  override readonly name = 'PromParseError'
}

function fail (line: number, why: string, text: string): never {
  throw new PromParseError(`line ${line}: ${why}: ${JSON.stringify(text)}`)
}

function parseValue (s: string, line: number, text: string): number {
  if (!FLOAT.test(s)) fail(line, 'bad value', text)
  const lower = s.toLowerCase()
  if (lower.endsWith('nan')) return Number.NaN
  if (lower.includes('inf')) return s.startsWith('-') ? -Infinity : Infinity
  return Number(s)
}

/** The HELP text's escapes: `\\` and `\n` only. */
function unescapeHelp (s: string, line: number, text: string): string {
  return s.replace(/\\(.?)/g, (_m, c: string) => {
    if (c === '\\') return '\\'
    if (c === 'n') return '\n'
    return fail(line, 'bad escape in HELP', text)
  })
}

/** Parses one sample line. */
export function parseSampleLine (text: string, line = 1): PromSample {
  const m = new RegExp(`^(${NAME})`).exec(text)
  if (m === null) fail(line, 'bad metric name', text)
  const name = m[1] as string
  let i = name.length
  const labels: Record<string, string> = {}
  if (text[i] === '{') {
    i++
    for (;;) {
      while (text[i] === ' ') i++
      if (text[i] === '}') { i++; break }
      const eq = text.indexOf('=', i)
      if (eq === -1) fail(line, 'label without =', text)
      const labelName = text.slice(i, eq).trim()
      if (!LABEL_NAME.test(labelName)) fail(line, 'bad label name', text)
      if (labelName in labels) fail(line, `label ${labelName} given twice`, text)
      i = eq + 1
      if (text[i] !== '"') fail(line, 'label value not quoted', text)
      i++
      let value = ''
      for (;;) {
        const c = text[i]
        if (c === undefined) fail(line, 'unterminated label value', text)
        if (c === '"') { i++; break }
        if (c === '\\') {
          const e = text[i + 1]
          if (e === '\\') value += '\\'
          else if (e === '"') value += '"'
          else if (e === 'n') value += '\n'
          else fail(line, 'bad escape in label value', text)
          i += 2
          continue
        }
        if (c === '\n') fail(line, 'raw newline in label value', text)
        value += c
        i++
      }
      labels[labelName] = value
      while (text[i] === ' ') i++
      if (text[i] === ',') { i++; continue }
      if (text[i] === '}') { i++; break }
      fail(line, 'expected , or } after a label', text)
    }
  }
  if (text[i] !== ' ' && text[i] !== '\t') fail(line, 'no blank between name and value', text)
  const rest = text.slice(i).trim().split(/[ \t]+/)
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') fail(line, 'expected a value and an optional timestamp', text)
  const value = parseValue(rest[0] as string, line, text)
  if (rest.length === 2 && !/^-?\d+$/.test(rest[1] as string)) fail(line, 'bad timestamp', text)
  return { name, labels, value, line }
}

/** Which family a sample belongs to, given the families declared so far. */
function familyOf (sampleName: string, families: Map<string, PromFamily>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sampleName.endsWith(suffix)) continue
    const base = sampleName.slice(0, -suffix.length)
    const f = families.get(base)
    if (f !== undefined && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket'))) return base
  }
  return sampleName
}

function seriesKey (name: string, labels: Record<string, string>): string {
  return name + JSON.stringify(Object.entries(labels).sort(([a], [b]) => a < b ? -1 : 1))
}

/** Parses a whole exposition; families in the order they appear. */
export function parsePromText (text: string): Map<string, PromFamily> {
  if (text !== '' && !text.endsWith('\n')) throw new PromParseError('the exposition does not end with a newline')
  const families = new Map<string, PromFamily>()
  const closed = new Set<string>()
  const seen = new Set<string>()
  let current: string | undefined
  const declared = (name: string): PromFamily => {
    let f = families.get(name)
    if (f === undefined) {
      f = { name, type: 'untyped', samples: [] }
      families.set(name, f)
    }
    return f
  }
  const enter = (name: string, line: number, text: string): void => {
    if (current === name) return
    if (closed.has(name)) fail(line, `family ${name} is not contiguous`, text)
    if (current !== undefined) closed.add(current)
    current = name
  }

  const lines = text.split('\n')
  lines.pop() // after the final newline
  lines.forEach((raw, index) => {
    const line = index + 1
    if (raw.trim() === '') return
    if (raw.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(raw)
      if (m === null) return // a comment
      const [, kind, name, rest = ''] = m as unknown as [string, string, string, string | undefined]
      if (!METRIC_NAME.test(name)) fail(line, 'bad metric name', raw)
      enter(name, line, raw)
      const f = declared(name)
      if (kind === 'HELP') {
        if (f.help !== undefined) fail(line, 'HELP given twice', raw)
        f.help = unescapeHelp(rest, line, raw)
      } else {
        if (seen.has('type:' + name)) fail(line, 'TYPE given twice', raw)
        if (f.samples.length > 0) fail(line, 'TYPE after the first sample', raw)
        if (!TYPES.has(rest.trim() as MetricType)) fail(line, 'unknown type', raw)
        f.type = rest.trim() as MetricType
        seen.add('type:' + name)
      }
      return
    }
    const sample = parseSampleLine(raw, line)
    const family = familyOf(sample.name, families)
    enter(family, line, raw)
    const f = declared(family)
    const key = seriesKey(sample.name, sample.labels)
    if (seen.has(key)) fail(line, 'series given twice', raw)
    seen.add(key)
    f.samples.push(sample)
  })

  for (const f of families.values()) {
    if (f.type === 'histogram') checkHistogram(f)
  }
  return families
}

function checkHistogram (f: PromFamily): void {
  const groups = new Map<string, { buckets: Array<[number, number]>, sum?: number, count?: number, line: number }>()
  for (const s of f.samples) {
    const { le, ...rest } = s.labels
    const key = seriesKey('', rest)
    let g = groups.get(key)
    if (g === undefined) {
      g = { buckets: [], line: s.line }
      groups.set(key, g)
    }
    if (s.name === f.name + '_bucket') {
      if (le === undefined) fail(s.line, 'bucket without le', s.name)
      g.buckets.push([parseValue(le, s.line, s.name), s.value])
    } else if (s.name === f.name + '_sum') g.sum = s.value
    else if (s.name === f.name + '_count') g.count = s.value
    else fail(s.line, `sample ${s.name} in histogram ${f.name}`, s.name)
  }
  for (const g of groups.values()) {
    const where = `histogram ${f.name} (series at line ${g.line})`
    if (g.sum === undefined) throw new PromParseError(`${where}: no _sum`)
    if (g.count === undefined) throw new PromParseError(`${where}: no _count`)
    const last = g.buckets[g.buckets.length - 1]
    if (last === undefined || last[0] !== Infinity) throw new PromParseError(`${where}: no le="+Inf" bucket (last)`)
    for (let i = 1; i < g.buckets.length; i++) {
      const [le0, v0] = g.buckets[i - 1] as [number, number]
      const [le1, v1] = g.buckets[i] as [number, number]
      if (!(le1 > le0)) throw new PromParseError(`${where}: le not ascending`)
      if (v1 < v0) throw new PromParseError(`${where}: buckets not cumulative`)
    }
    if (last[1] !== g.count) throw new PromParseError(`${where}: +Inf bucket ${last[1]} != _count ${g.count}`)
  }
}

/** The value of one series, or undefined. `labels` must match exactly (all of them). */
export function valueOf (families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = seriesKey(name, labels)
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === name && seriesKey(s.name, s.labels) === want) return s.value
    }
  }
  return undefined
}
