import { h, clear, when, badge, table, errorBox, loading, json } from './dom.js';
import { api, path } from './api.js';

const PAGE = 100;
// The newest first page: seqs are below this (the service's largest).
const NEWEST = '9223372036854775807';

/** Pages of events newest first, fetched only when asked for, so a user with 10,000 events stays light. */
export function renderTimeline(container, userId, version) {
  const list = h('ol', { class: 'timeline', id: 'timeline' });
  const status = h('p', { class: 'muted', role: 'status', id: 'timeline-status' });
  const more = h('button', { type: 'button', id: 'timeline-more', class: 'secondary', hidden: true }, 'Load older events');
  container.append(list, status, more);
  let before = version === null || version === undefined ? NEWEST : String(version + 1);
  let shown = 0;
  let busy = false;
  const load = async () => {
    if (busy || before === null) return;
    busy = true;
    more.disabled = true;
    status.textContent = 'Loading events…';
    try {
      const page = await api(`/v1/users/${path(userId)}/events?before=${before}&limit=${PAGE}`);
      const fragment = document.createDocumentFragment();
      for (const event of page.events ?? []) fragment.append(eventItem(event));
      list.append(fragment);
      shown += (page.events ?? []).length;
      before = page.next === null || page.next === undefined ? null : String(page.next);
      status.textContent = shown === 0 ? 'No events recorded.'
        : `${shown} event${shown === 1 ? '' : 's'} shown${before === null ? ', the whole history' : ''}.`;
    } catch (error) {
      status.textContent = '';
      status.append(errorBox(error, 'Loading events'));
    } finally {
      busy = false;
      more.disabled = false;
      more.hidden = before === null;
    }
  };
  more.addEventListener('click', load);
  load();
}

function eventItem(event) {
  const body = h('div', { class: 'payload' });
  const data = event.data ?? {};
  // A notification is told by its type and subtype (what Apple said happened), then its transaction.
  const notification = data.notificationType
    ? h('span', { class: 'notification-type' }, data.notificationType, data.subtype ? ` · ${data.subtype}` : '', ' ')
    : null;
  const subject = data.productId ?? data.transactionId ?? '';
  const details = h('details', { class: 'event', 'data-seq': event.seq },
    h('summary', {}, when(event.recordedAt), ' ', h('strong', { class: 'event-type' }, event.type), ' ',
      notification, subject ? h('span', { class: 'muted' }, String(subject), ' ') : null,
      h('span', { class: 'muted' }, `seq ${event.seq} · ${event.stream ?? ''}`)),
    body);
  // The payload is built when first opened: thousands of closed events cost a line each.
  details.addEventListener('toggle', () => {
    if (details.open && !body.firstChild) body.append(json(event.data));
  }, { once: false });
  return h('li', {}, details);
}

const changeKinds = { REFUND: 'bad', EXPIRATION: 'off', BILLING_ISSUE: 'warn', CANCELLATION: 'warn',
  PROMOTIONAL_REVOKE: 'warn', CORRECTION: 'warn' };
const MAX_CHANGE_PAGES = 10;

/** The user's changes (oldest first in the feed, shown newest first), and from them the balance ledger. */
export async function renderChanges(container, ledger, userId, asOf) {
  follower?.abort();
  const all = [];
  let after = null;
  let complete = false;
  try {
    for (let page = 0; page < MAX_CHANGE_PAGES; page++) {
      const answer = await api(`/v1/changes?${changesQuery(userId, after)}`);
      all.push(...(answer.changes ?? []));
      after = answer.next;
      if ((answer.changes ?? []).length < 1000) { complete = true; break; }
    }
  } catch (error) {
    clear(container).append(errorBox(error, 'Loading changes'));
    clear(ledger).append(errorBox(error, 'Loading the balance ledger'));
    return;
  }
  drawChanges(container, ledger, all, complete, asOf);
  if (asOf || !complete) return;
  const mine = new AbortController();
  follower = mine;
  followChanges(container, ledger, userId, all, after, mine.signal);
}

// The one long poll that keeps the page's changes current; a new page's replaces it, so
// polls of pages left behind never pile up against the browser's six connections.
let follower = null;

const changesQuery = (userId, after, wait) => `userId=${encodeURIComponent(userId)}&limit=1000` +
  (after ? `&after=${encodeURIComponent(after)}` : '') + (wait ? `&wait=${wait}` : '');

/**
 * The feed shows a change once every transaction that began before it has ended, so a change
 * made a moment ago (a grant from this very page) can appear after the page was drawn: the
 * page waits for it, and for anyone else's, on the feed's long poll.
 */
async function followChanges(container, ledger, userId, all, after, signal) {
  while (!signal.aborted && container.isConnected) {
    let answer;
    try {
      answer = await api(`/v1/changes?${changesQuery(userId, after, 20)}`, { signal });
    } catch (error) {
      // A refused key has its own notice; anything but a network failure or a 5xx ends the wait.
      if (signal.aborted || (error.status !== 0 && error.status < 500)) return;
      await new Promise((resolve) => setTimeout(resolve, 5000));
      continue;
    }
    if (signal.aborted || !container.isConnected) return;
    after = answer.next ?? after;
    if ((answer.changes ?? []).length) {
      all.push(...answer.changes);
      drawChanges(container, ledger, all, true, null);
    }
  }
}

function drawChanges(container, ledger, all, complete, asOf) {
  const cutoff = asOf ? asOf.getTime() : Infinity;
  const changes = all.filter((c) => new Date(c.recordedAt ?? c.occurredAt).getTime() <= cutoff).reverse();
  clear(container);
  if (!changes.length) container.append(h('p', { class: 'empty' }, 'No changes.'));
  else renderChangeRows(container, changes);
  if (!complete) container.append(h('p', { class: 'muted' }, `Only the first ${all.length} changes were read.`));
  const moves = changes.filter((c) => c.details && c.details.currency !== undefined && c.details.amount !== undefined);
  clear(ledger);
  if (!moves.length) { ledger.append(h('p', { class: 'empty' }, 'No balance movements.')); return; }
  ledger.append(h('div', { id: 'balance-ledger' }, table(['When', 'Currency', 'Amount', 'Balance after', 'Why'],
    moves.map((c) => [when(c.occurredAt), h('code', {}, c.details.currency),
      `${c.type === 'BALANCE_DEBIT' || c.type === 'REFUND' ? '−' : '+'}${c.details.amount}`,
      String(c.details.balance ?? '—'), c.type]), 'Balance ledger')));
}

function renderChangeRows(container, changes) {
  const body = h('tbody', {});
  const shown = { n: 0 };
  const more = h('button', { type: 'button', class: 'secondary' }, 'Show more changes');
  const add = () => {
    const next = changes.slice(shown.n, shown.n + 50);
    for (const c of next) {
      body.append(h('tr', {},
        h('td', {}, when(c.occurredAt)), h('td', {}, badge(c.type, changeKinds[c.type] ?? 'info')),
        h('td', {}, c.productId ?? '—'), h('td', {}, (c.entitlementIds ?? []).join(', ') || '—'),
        h('td', {}, c.details && Object.keys(c.details).length ? JSON.stringify(c.details) : '—')));
    }
    shown.n += next.length;
    more.hidden = shown.n >= changes.length;
  };
  more.addEventListener('click', add);
  container.append(h('div', { class: 'table-wrap' }, h('table', { id: 'changes' },
    h('thead', {}, h('tr', {}, ['When', 'Type', 'Product', 'Entitlements', 'Details'].map((x) => h('th', { scope: 'col' }, x)))),
    body)), more);
  add();
}