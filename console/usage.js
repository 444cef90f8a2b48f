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

/** A small line of a series' total requests per point, for a table cell. */
export function sparkline (points, label) {
  const el = h('span', { class: 'spark', role: 'img', 'aria-label': label })
  const data = [
    points.map((p) => Date.parse(p.t) / 1000),
    points.map((p) => p.allowed + p.refused + p.limited + p.errors)
  ]
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

/**
 * The usage panel: a chart of the four classes over the chosen range and the same
 * numbers as a table. `subject` is { key } or { org }; `title` names it.
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
    const { points } = subject.key !== undefined
      ? await api.keyUsage(subject.key, range)
      : await api.orgUsage(subject.org, range)
    const data = [points.map((p) => Date.parse(p.t) / 1000), ...CLASSES.map(([c]) => points.map((p) => p[c]))]
    chart?.destroy()
    const box = $('usage-chart')
    box.replaceChildren()
    chart = new UPlot({
      width: Math.max(280, Math.min(900, box.clientWidth || 600)),
      height: 240,
      // the axis and the legend in UTC, as the table and the rest of the console
      tzDate: (ts) => UPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      series: [{}, ...CLASSES.map(([, label, stroke]) => ({ label, stroke, width: 2, points: { show: false } }))]
    }, data, box)
    $('usage-total').textContent = `${totalOf(points).toLocaleString('en')} requests in the range (UTC).`
    $('usage-table-body').replaceChildren(...points.map((p) =>
      h('tr', {}, h('td', { class: 'mono nowrap' }, p.t.slice(0, 16).replace('T', ' ')),
        ...CLASSES.map(([c]) => h('td', { class: 'num', 'data-class': c }, String(p[c]))))))
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
