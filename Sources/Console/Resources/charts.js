import { h, s, table, when } from './dom.js';

const W = 720, H = 240, L = 56, R = 12, T = 12, B = 36;

function scale(series) {
  const times = [...new Set(series.flatMap((x) => x.points.map((p) => p.t)))].sort();
  const max = Math.max(1, ...series.flatMap((x) => x.points.map((p) => Number(p.value) || 0)));
  const min = Math.min(0, ...series.flatMap((x) => x.points.map((p) => Number(p.value) || 0)));
  const x = (i) => L + (times.length <= 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (times.length - 1));
  const y = (v) => T + (H - T - B) * (1 - (v - min) / (max - min || 1));
  return { times, max, min, x, y };
}

const label = (t) => new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });

function axes(sc, decimals) {
  const g = s('g', { class: 'axes' });
  // A midpoint that rounds to an end's label (0…1 in whole numbers) is left out.
  const ticks = [sc.min, (sc.min + sc.max) / 2, sc.max];
  const labels = new Set();
  for (const v of ticks) {
    if (labels.has(v.toFixed(decimals))) continue;
    labels.add(v.toFixed(decimals));
    g.append(s('line', { x1: L, x2: W - R, y1: sc.y(v), y2: sc.y(v), class: 'grid' }),
      s('text', { x: L - 6, y: sc.y(v) + 4, 'text-anchor': 'end' }, v.toFixed(decimals)));
  }
  const step = Math.max(1, Math.ceil(sc.times.length / 8));
  sc.times.forEach((t, i) => {
    if (i % step === 0) g.append(s('text', { x: sc.x(i), y: H - B + 18, 'text-anchor': 'middle' }, label(t)));
  });
  return g;
}

function frame(options, ...children) {
  return s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': options.label, class: 'chart' },
    s('title', {}, options.label), ...children);
}

function dataTable(series, sc, decimals) {
  return h('details', { class: 'chart-data' }, h('summary', {}, 'Numbers'),
    table(['Period', ...series.map((x) => x.name)], sc.times.map((t) => [when(t),
      ...series.map((x) => { const p = x.points.find((q) => q.t === t); return p ? Number(p.value).toFixed(decimals) : '—'; })])));
}

function empty(series) { return series.every((x) => !x.points.length); }

export function lineChart(series, options) {
  const decimals = options.decimals ?? 0;
  if (empty(series)) return h('p', { class: 'empty' }, 'No data in this range.');
  const sc = scale(series);
  const lines = series.map((x, n) => {
    const pts = x.points.map((p) => [sc.x(sc.times.indexOf(p.t)), sc.y(Number(p.value) || 0), p]);
    return s('g', { class: `series series-${n}` },
      s('polyline', { points: pts.map(([a, b]) => `${a},${b}`).join(' '), fill: 'none' }),
      pts.map(([a, b, p]) => s('circle', { cx: a, cy: b, r: 3 },
        s('title', {}, `${label(p.t)}: ${Number(p.value).toFixed(decimals)}`))));
  });
  return h('div', { class: 'chart-block' }, frame(options, axes(sc, decimals), lines), dataTable(series, sc, decimals));
}

export function barChart(series, options) {
  if (empty(series)) return h('p', { class: 'empty' }, 'No data in this range.');
  const sc = scale(series);
  const slot = (W - L - R) / Math.max(1, sc.times.length);
  const bar = Math.max(1, (slot * 0.8) / series.length);
  const x = (i) => L + i * slot + slot * 0.1;
  const groups = series.map((ser, n) => s('g', { class: `series series-${n}` },
    ser.points.map((p) => {
      const i = sc.times.indexOf(p.t);
      const top = sc.y(Number(p.value) || 0);
      return s('rect', { x: x(i) + n * bar, y: top, width: bar, height: Math.max(0, sc.y(0) - top) },
        s('title', {}, `${label(p.t)} ${ser.name}: ${p.value}`));
    })));
  const legend = h('p', { class: 'legend' }, series.map((ser, n) =>
    h('span', { class: `key series-${n}` }, h('span', { class: 'swatch', 'aria-hidden': 'true' }), ` ${ser.name} `)));
  const sc2 = { ...sc, x: (i) => x(i) + slot * 0.4 };
  return h('div', { class: 'chart-block' }, frame(options, axes(sc2, 0), groups), legend, dataTable(series, sc, 0));
}