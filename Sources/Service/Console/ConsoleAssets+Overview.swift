extension ConsoleAssets {
    /// The Overview page: the analytics series of `GET /v1/admin/metrics/overview` as SVG charts.
    static let overview = #"""
        import { h, clear, section, errorBox, loading, navigate, parseInstant } from './dom.js';
        import { api } from './api.js';
        import { lineChart, barChart } from './charts.js';

        const DAY = 86400000;

        export async function renderOverview(main, { params, isCurrent }) {
          const to = parseInstant(params.get('to') ?? '') ?? new Date();
          const from = parseInstant(params.get('from') ?? '') ?? new Date(to.getTime() - 30 * DAY);
          const interval = ['day', 'week', 'month'].includes(params.get('interval')) ? params.get('interval') : 'day';
          // One store at a time, Production unless asked: Sandbox and test purchases are no revenue
          // and the API never sums environments (api.md §3.1), so there is no "all".
          const environment = ENVIRONMENTS.includes(params.get('environment')) ? params.get('environment') : 'Production';
          main.append(h('h1', {}, 'Overview'), rangeForm(from, to, interval, environment));
          // Says which store's money this is, as the answer names it (not as the form asked).
          const status = h('p', { id: 'overview-environment', role: 'status' }, `Environment: ${environment} (loading).`);
          main.append(status);
          const body = h('div', { class: 'charts' }, loading('Loading the metrics…'));
          main.append(body);
          const query = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), interval, environment });
          let metrics;
          try {
            metrics = await api(`/v1/admin/metrics/overview?${query}`);
          } catch (error) {
            if (isCurrent()) clear(body).append(errorBox(error, 'Loading the metrics'),
              h('p', { class: 'muted' }, 'The charts need an admin key and the analytics projection.'));
            return;
          }
          if (!isCurrent()) return;
          clear(status).append('Environment: ', h('strong', {}, metrics?.environment ?? 'unknown'), '.');
          clear(body);
          const series = metrics?.series ?? {};
          body.append(section('Active subscriptions',
            lineChart([{ name: 'active', points: series.activeSubscriptions ?? [] }], { label: 'Active subscriptions', interval })));
          const mrr = Object.entries(series.mrr ?? {});
          body.append(section('MRR by currency', mrr.length
            ? mrr.map(([currency, points]) => h('div', { class: 'chart-block' }, h('h3', {}, currency),
              lineChart([{ name: currency, points: points.map((p) => ({ t: p.t, value: p.value / 1000 })) }],
                { label: `MRR in ${currency}`, interval, decimals: 2 })))
            : h('p', { class: 'empty' }, 'No revenue in this range.')));
          // Money that moved in each bucket, per currency: charges, refunds, and the proceeds of both.
          const currencies = [...new Set(['revenue', 'refunds', 'proceeds'].flatMap((k) => Object.keys(series[k] ?? {})))].sort();
          const milli = (points) => (points ?? []).map((p) => ({ t: p.t, value: p.value / 1000 }));
          body.append(section('Revenue, refunds and proceeds', currencies.length
            ? currencies.map((currency) => h('div', { class: 'chart-block', id: `money-${currency}` }, h('h3', {}, currency),
              lineChart([
                { name: 'revenue', points: milli(series.revenue?.[currency]) },
                { name: 'refunds', points: milli(series.refunds?.[currency]) },
                { name: 'proceeds', points: milli(series.proceeds?.[currency]) },
              ], { label: `Revenue, refunds and proceeds in ${currency}`, interval, decimals: 2 })))
            : h('p', { class: 'empty' }, 'No money moved in this range.')));
          body.append(section('Free trials', barChart([
            { name: 'started', points: series.trialsStarted ?? [] },
            { name: 'converted', points: series.trialsConverted ?? [] },
          ], { label: `Free trials started and converted per ${interval}`, interval })));
          body.append(section('New, churned and refunded', barChart([
            { name: 'new', points: series.new ?? [] },
            { name: 'churned', points: series.churned ?? [] },
            { name: 'refunded', points: series.refunded ?? [] },
          ], { label: `New, churned and refunded per ${interval}`, interval })));
        }

        const ENVIRONMENTS = ['Production', 'Sandbox', 'Xcode', 'LocalTesting'];

        function rangeForm(from, to, interval, environment) {
          const date = (d) => d.toISOString().slice(0, 10);
          const fromInput = h('input', { id: 'range-from', type: 'date', value: date(from) });
          const toInput = h('input', { id: 'range-to', type: 'date', value: date(to) });
          const select = h('select', { id: 'range-interval' },
            ['day', 'week', 'month'].map((x) => h('option', { value: x, selected: x === interval }, x)));
          const environmentSelect = h('select', { id: 'range-environment' },
            ENVIRONMENTS.map((x) => h('option', { value: x, selected: x === environment }, x)));
          return h('form', { class: 'lookup', 'aria-label': 'Range', onsubmit: (e) => {
            e.preventDefault();
            const q = new URLSearchParams({ interval: select.value, environment: environmentSelect.value });
            if (fromInput.value) q.set('from', `${fromInput.value}T00:00:00Z`);
            if (toInput.value) q.set('to', `${toInput.value}T23:59:59Z`);
            navigate(`#/overview?${q}`);
          } },
            h('div', { class: 'field' }, h('label', { for: 'range-from' }, 'From (UTC day)'), fromInput),
            h('div', { class: 'field' }, h('label', { for: 'range-to' }, 'To (UTC day)'), toInput),
            h('div', { class: 'field' }, h('label', { for: 'range-interval' }, 'Interval'), select),
            h('div', { class: 'field' }, h('label', { for: 'range-environment' }, 'Environment'), environmentSelect),
            h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Show')));
        }
        """#

    /// Line and grouped bar charts in SVG, each with its numbers in a table beside it (for screen readers and copying).
    static let charts = #"""
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
        """#
}
