// Request counts (GET /keys/:id/usage, /orgs/:org/usage, /usage/keys: docs/usage.md) drawn with uPlot,
// served from this origin (uplot.js, uplot.css). Each chart has its numbers as a table too,
// for screen readers and for copying.
import UPlot from './uplot.js'
import { api } from './api.js'
import { $, h, show } from './dom.js'

const CLASSES = [
  ['allowed', 'Allowed', '#2f7d4f'],
  ['refused', 'Refused', '#b7791f'],
  ['limited', 'Limited', '#6b46c1'],
  ['errors', 'Errors', '#c53030']
]

const STEP_MS = { '1m': 60_000, '1h': 3_600_000, '1d': 86_400_000 }

/** The total requests of a series. */
export function totalOf (points) {
  let n = 0
  for (const p of points) n += p.allowed + p.refused + p.limited + p.errors
  return n
}

/** A point's uses: what the key's holder sent and the key let in, limited or failed; refusals apart. */
export function usesOf (p) {
  return p.allowed + p.limited + p.errors
}

/** A small line of a series' uses per point (refusals apart), for a table cell. */
export function sparkline (points, label) {
  const el = h('span', { class: 'spark', role: 'img', 'aria-label': label })
  const data = [points.map((p) => Date.parse(p.t) / 1000), points.map(usesOf)]
  // (uPlot draws into the element once it is in the document: after the row is placed)
  queueMicrotask(() => {
    // eslint-disable-next-line no-new
    new UPlot({
      width: 64,
      height: 24,
      pxAlign: false,
      cursor: { show: false },
      legend: { show: false },
      select: { show: false },
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{ show: false }, { show: false }],
      series: [{}, { stroke: '#2b6cb0', width: 1.5, fill: 'rgba(43,108,176,0.12)', points: { show: false } }]
    }, data, el)
  })
  return el
}

/** Tick steps of a count axis: whole numbers only (no 2.5 requests). */
export const COUNT_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5,
  5e5, 1e6, 2e6, 5e6, 1e7, 1e8, 1e9]

/** `2026-11-28 14:00` (UTC, 24-hour), as the table writes a time. */
function utc (seconds) {
  return new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ')
}

/** The time axis's labels, UTC and 24-hour as in the table: days as `11-28`, hours and minutes as `14:00`. */
export function timeTicks (_u, splits, _axis, _space, incr) {
  return splits.map((s) => {
    const text = utc(s)
    return incr >= 86400 || text.endsWith('00:00') ? text.slice(5, 10) : text.slice(11)
  })
}

/**
 * A metered key's allowances (GET /keys/:id/quota) as one line each: what is left of what.
 * The key's own come first; the org's are one balance shared by every key of the org.
 * An identity's (GET /identities/:id: `allowance`) is passed as `key`, named by `own`.
 */
export function allowanceLines (view, own = 'Key') {
  const out = []
  for (const [level, a] of [[own, view.key], ['Org', view.org_allowance]]) {
    if (a.quota !== undefined) {
      out.push(`${level} quota: ${fmt(Math.max(0, a.quota.remaining))} of ${fmt(a.quota.limit)} left ` +
        `(${a.quota.quota}), refills ${a.quota.resets_at.slice(0, 16).replace('T', ' ')} UTC`)
    }
    if (a.credits !== undefined) {
      out.push(`${level} credits: ${fmt(a.credits.remaining)} of ${fmt(a.credits.granted)} left`)
    }
  }
  return out
}

const fmt = (n) => n.toLocaleString('en')

/**
 * The burn-down of the key's own allowance (its quota, else its credits): the units left at
 * the end of each step, worked back from what is left now by adding the requests the key
 * was allowed after that step (each counted as one unit: a rule's other cost makes the
 * line an estimate; the last value is the meter's own). Steps before the quota's current
 * period have no value (null). Undefined when the key itself has no allowance.
 */
export function burnDown (points, view, stepMs) {
  const a = view.key
  const remaining = a.quota?.remaining ?? a.credits?.remaining
  if (remaining === undefined) return undefined
  const start = a.quota === undefined ? -Infinity : Date.parse(a.quota.period_start)
  const out = new Array(points.length).fill(null)
  let after = 0
  for (let j = points.length - 1; j >= 0; j--) {
    const t = Date.parse(points[j].t)
    if (t + stepMs <= start) break
    out[j] = Math.max(0, remaining + after)
    if (t >= start) after += points[j].allowed
  }
  return out
}

/**
 * The usage panel: a chart of the four classes over the chosen range and the same
 * numbers as a table. `subject` is { key }, { org } or { identity } (the sum of its keys);
 * `title` names it. A key's identity and meta, and an identity's allowance, are shown with it.
 */
export function usagePanel (ctx) {
  let subject = null
  let chart = null

  async function open (s, title) {
    subject = s
    $('usage-title').textContent = title
    show($('usage-panel'), true)
    await draw()
    $('usage-panel').scrollIntoView?.({ block: 'nearest' })
  }

  async function draw () {
    if (subject === null) return
    const [since, step] = $('usage-range').value.split(':')
    // the range ends with the current step, as the API's default does
    const stepMs = STEP_MS[step]
    const end = Math.ceil((Date.now() + 1) / stepMs) * stepMs
    const range = {
      from: new Date(end - Number(since) * 3_600_000).toISOString(), to: new Date(end).toISOString(), step
    }
    const [{ points, env }, meter, facts] = await subjectReads(subject, range)
    if (facts === undefined) show($('usage-facts'), false)
    else {
      $('usage-facts').replaceChildren(...facts.flatMap(([k, v, field]) =>
        [h('dt', {}, k), h('dd', { class: 'wrap-anywhere', 'data-field': field }, v)]))
      show($('usage-facts'), facts.length > 0)
    }
    // a key's environment beside its title (a test key's requests reach only test upstreams)
    const envLabel = $('usage-env')
    envLabel.textContent = env === undefined ? '' : env === 'test' ? 'test key' : 'live key'
    envLabel.dataset.env = env ?? ''
    envLabel.className = `badge badge-${env === 'test' ? 'test' : 'off'}`
    show(envLabel, env !== undefined)
    // a metered key: what is left, and the burn-down of its own allowance on a second axis
    const lines = meter === undefined ? [] : allowanceLines(meter, subject.identity === undefined ? 'Key' : 'Identity')
    const burn = meter === undefined ? undefined : burnDown(points, meter, stepMs)
    $('usage-quota').replaceChildren(...lines.map((l) => h('li', {}, l)))
    show($('usage-quota'), lines.length > 0)
    // stacked bars, one a bucket: each class drawn as the sum of itself and the classes below
    // it, the tallest (errors, the top of the stack) first; the legend and the cursor read
    // each class's own count, and the legend its total over the range until hovered
    const order = [...CLASSES].reverse()
    const own = order.map(([c]) => points.map((p) => p[c]))
    const stacked = order.map((_c, i) => points.map((_p, j) => own.slice(i).reduce((sum, s) => sum + s[j], 0)))
    const totals = own.map((s) => s.reduce((a, b) => a + b, 0))
    const stepS = stepMs / 1000
    chart?.destroy()
    const box = $('usage-chart')
    box.replaceChildren()
    chart = new UPlot({
      width: Math.max(280, Math.min(900, box.clientWidth || 600)),
      height: 240,
      // the axis and the legend in UTC, as the table and the rest of the console
      tzDate: (ts) => UPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      scales: {
        // (a bucket's bar spans its step, from its start)
        x: { range: (_u, min, max) => [min, max + stepS] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
        units: { range: (_u, _min, max) => [0, Math.max(1, max ?? 1)] }
      },
      axes: [
        { values: timeTicks, space: 60 },
        { incrs: COUNT_INCRS, values: (_u, splits) => splits.map((v) => v.toLocaleString('en')) },
        ...(burn === undefined
          ? []
          : [{
              scale: 'units',
              side: 1,
              grid: { show: false },
              incrs: COUNT_INCRS,
              values: (_u, splits) => splits.map(fmt)
            }])
      ],
      series: [
        { label: 'Time (UTC)', value: (_u, v) => v === null ? 'whole range' : utc(v) },
        ...order.map(([, label, color], i) => ({
          label,
          stroke: color,
          fill: color,
          width: 0,
          paths: UPlot.paths.bars({ size: [1, 60], align: 1, gap: 1 }),
          points: { show: false },
          value: (_u, _v, _s, idx) => (idx === null ? totals[i] : own[i][idx]).toLocaleString('en')
        })),
        ...(burn === undefined
          ? []
          : [{
              label: 'Remaining',
              scale: 'units',
              stroke: '#2b6cb0',
              width: 2,
              points: { show: false },
              value: (_u, v, _s, idx) => idx === null ? fmt(burn[burn.length - 1] ?? 0) : v === null ? '-' : fmt(v)
            }])
      ]
    }, [points.map((p) => Date.parse(p.t) / 1000), ...stacked, ...(burn === undefined ? [] : [burn])], box)
    box.dataset.burnDown = burn === undefined ? '' : burn.map((v) => v ?? '').join(',')
    $('usage-total').textContent = `${totalOf(points).toLocaleString('en')} requests in the range (UTC).`
    $('usage-table-body').replaceChildren(...points.map((p) =>
      h('tr', {}, h('td', { class: 'mono nowrap' }, p.t.slice(0, 16).replace('T', ' ')),
        ...CLASSES.map(([c]) => h('td', { class: 'num', 'data-class': c }, String(p[c]))))))
  }

  /**
   * What the chart of a subject reads: its series, its allowances (a key's and its org's; an identity's) and the facts
   * shown above it (a key's identity and meta).
   */
  async function subjectReads (s, range) {
    if (s.key !== undefined) {
      const [series, meter, key] = await Promise.all([api.keyUsage(s.key, range), api.keyQuota(s.key), api.key(s.key)])
      const facts = []
      if (key.identity !== undefined) facts.push(['Identity', key.identity, 'identity'])
      if (key.meta !== undefined) facts.push(['Meta', JSON.stringify(key.meta), 'meta'])
      return [series, meter, facts]
    }
    if (s.identity !== undefined) {
      const [series, identity] = await Promise.all([api.identityUsage(s.identity, range), api.identity(s.identity)])
      return [series, { key: identity.allowance ?? {}, org_allowance: {} }, undefined]
    }
    return [await api.orgUsage(s.org, range), undefined, undefined]
  }

  $('usage-range').addEventListener('change', () => { draw().catch(ctx.fail) })
  $('usage-close').addEventListener('click', () => close())

  function close () {
    subject = null
    chart?.destroy()
    chart = null
    show($('usage-panel'), false)
  }

  return { open, close }
}
