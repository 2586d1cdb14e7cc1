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