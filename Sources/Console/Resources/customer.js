import { h, clear, when, badge, section, table, errorBox, loading, json, parseInstant, navigate } from './dom.js';
import { api, path } from './api.js';
import { renderTimeline, renderChanges } from './customer-history.js';
import { renderGrants } from './grants.js';
import { resolveSearch } from './search.js';

/** What the last search matched, said once on the page it opened. */
let lastMatch = null;

export async function renderCustomer(main, { args, params, isCurrent }) {
  const userId = args.join('/');
  const asOfText = params.get('asOf') ?? '';
  const matched = lastMatch && lastMatch.userId === userId ? lastMatch.sentence : null;
  lastMatch = null;
  main.append(lookupForm(userId, asOfText, matched));
  if (!userId) {
    main.append(h('p', { class: 'muted' }, 'Enter a user id, a transactionId, an originalTransactionId, an appAccountToken '
      + 'or the order ID of an App Store receipt to see what the customer has and how they got it.'));
    document.getElementById('user-id').focus();
    return;
  }
  const asOf = asOfText ? parseInstant(asOfText) : null;
  if (asOfText && !asOf) {
    main.append(errorBox({ detail: `"${asOfText}" is not a time.` }, 'Reading asOf'));
    return;
  }
  const body = h('div', { class: 'customer' }, loading(`Loading ${userId}…`));
  main.append(body);
  const query = asOf ? `?asOf=${encodeURIComponent(asOf.toISOString())}` : '';
  let customer;
  try {
    customer = await api(`/v1/users/${path(userId)}${query}`);
  } catch (error) {
    if (isCurrent()) clear(body).append(errorBox(error, `Looking up ${userId}`));
    return;
  }
  if (!isCurrent()) return;
  clear(body);
  body.append(header(customer, asOf));
  if (!customer.version) {
    // Version 0: nothing recorded for this id (a typo, or a user who never bought). Now, that
    // is all there is to say (and a grant to offer); as of a past instant the empty sections
    // still show, as for any other instant.
    body.append(section('Nothing yet', h('p', { class: 'empty', id: 'never-seen' },
      asOf ? `No purchases yet as of ${asOf.toISOString()}: nothing was recorded for ${userId} by then.`
        : `No purchases yet: nothing was ever recorded for ${userId}. Check the id, or record a purchase for it.`)));
    if (!asOf) { body.append(renderGrants(userId, customer)); return; }
  }
  body.append(entitlements(customer));
  body.append(subscriptions(customer));
  body.append(nonConsumables(customer));
  const ledger = h('div', { class: 'ledger' });
  body.append(section('Balances', balances(customer), h('h3', {}, 'Balance ledger'), ledger));
  if (!asOf) body.append(renderGrants(userId, customer));
  const changes = h('div', {}, loading('Loading changes…'));
  body.append(section('Changes', h('p', { class: 'muted' }, 'From the change feed, newest first.'), changes));
  const timeline = h('div', {});
  body.append(section('Timeline', h('p', { class: 'muted' },
    'Every recorded event, newest first. Open one to see its decoded, verified payload.'), timeline));
  renderChanges(changes, ledger, userId, asOf);
  renderTimeline(timeline, userId, asOf ? customer.version : null);
}

function lookupForm(userId, asOfText, matched) {
  const idInput = h('input', { id: 'user-id', name: 'userId', type: 'text', value: userId, required: true,
    autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'search-help',
    placeholder: 'user id, transactionId, appAccountToken or order ID' });
  const asOfInput = h('input', { id: 'as-of', name: 'asOf', type: 'text', value: asOfText,
    placeholder: 'now', 'aria-describedby': 'as-of-help' });
  const error = h('p', { class: 'error', role: 'alert', id: 'lookup-error' });
  const match = h('p', { class: 'match', role: 'status', id: 'lookup-match' }, matched ?? '');
  const go = async (asOfValue) => {
    const id = idInput.value.trim();
    if (!id) { error.textContent = 'Enter a user id, or an id of a purchase.'; idInput.focus(); return; }
    let query = '';
    if (asOfValue) {
      const date = parseInstant(asOfValue);
      if (!date) {
        error.textContent = `"${asOfValue}" is not a time: write 2026-12-02T10:00:00Z, or 2026-12-02 11:00 in your zone.`;
        asOfInput.focus();
        return;
      }
      query = `?asOf=${encodeURIComponent(date.toISOString())}`;
    }
    error.textContent = '';
    match.textContent = `Searching ${id}…`;
    let found;
    try {
      found = await resolveSearch(id);
    } catch (failure) {
      match.textContent = '';
      error.textContent = `Searching ${id} failed (${failure.status} ${failure.code}): ${failure.detail}`;
      return;
    }
    if (found.userId === null) { match.textContent = found.sentence; return; }
    lastMatch = found;
    match.textContent = '';
    navigate(`#/customer/${encodeURIComponent(found.userId)}${query}`);
  };
  return h('form', { class: 'lookup', role: 'search', 'aria-label': 'Customer lookup',
    onsubmit: (e) => { e.preventDefault(); go(asOfInput.value.trim()); } },
    h('div', { class: 'field' }, h('label', { for: 'user-id' }, 'Search'), idInput,
      h('small', { id: 'search-help', class: 'muted' },
        'A user id, transactionId, originalTransactionId, appAccountToken or App Store order ID.')),
    h('div', { class: 'field' }, h('label', { for: 'as-of' }, 'As of'), asOfInput,
      h('small', { id: 'as-of-help', class: 'muted' }, 'Empty for now; RFC 3339 or a local date and time.')),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', id: 'lookup' }, 'Look up'),
      h('button', { type: 'button', id: 'as-of-now', class: 'secondary',
        onclick: () => { asOfInput.value = ''; go(''); } }, 'Now')),
    match, error);
}

function header(customer, asOf) {
  return h('section', { class: 'card head', 'aria-labelledby': 'customer-title' },
    h('h1', { id: 'customer-title' }, 'Customer ', h('code', { id: 'customer-id' }, customer.userId)),
    customer.version ? h('p', {}, `Version ${customer.version}`) : null,
    // api.md §7: a hint for support, never a transfer.
    customer.sameAppleAccountAs?.length ? h('p', { id: 'same-apple-account' },
      'Bought with the same Apple Account as ',
      ...customer.sameAppleAccountAs.flatMap((user, i) => [i ? ', ' : '',
        h('a', { href: `#/customer/${encodeURIComponent(user)}` }, h('code', {}, user))]),
      ' (a hint: nothing was transferred).') : null,
    asOf ? h('p', { class: 'as-of', id: 'as-of-banner', role: 'status' }, badge('AS OF', 'warn'),
      ' Showing the state as of ', when(asOf.toISOString()), '. Writes are off in this view.') : null);
}

function entitlements(customer) {
  const entries = Object.entries(customer.entitlements ?? {});
  if (!entries.length) return section('Entitlements', h('p', { class: 'empty', id: 'no-entitlements' }, 'No entitlements.'));
  const subs = new Map((customer.subscriptions ?? []).map((s) => [s.originalTransactionId, s]));
  const rows = entries.map(([name, e]) => {
    const sub = subs.get(e.originalTransactionId);
    return [h('code', {}, name), entitlementBadge(e, sub), why(e, sub), e.productId ?? '—', e.source ?? '—',
      when(e.expiresAt)];
  });
  return section('Entitlements', h('div', { id: 'entitlements' },
    table(['Entitlement', 'Status', 'Why', 'Product', 'Source', 'Until'], rows, 'Entitlements')));
}

function entitlementBadge(e, sub) {
  if (!e.active) return badge('Expired', 'off');
  if (e.inGracePeriod) return badge('Active (grace period)', 'warn');
  if (sub?.status === 'in_billing_retry') return badge('Active (billing retry)', 'warn');
  return badge('Active', 'ok');
}

function why(e, sub) {
  const parts = [];
  const from = e.source === 'promotional' ? 'a promotional grant' : `${e.source ?? 'a purchase'} ${e.productId ?? ''}`;
  if (e.active) {
    parts.push(`Active through ${from}`);
    parts.push(e.expiresAt ? [' until ', when(e.expiresAt)] : ' with no end date');
    if (e.inGracePeriod) parts.push(sub?.gracePeriodExpiresAt
      ? [': billing failed, grace period until ', when(sub.gracePeriodExpiresAt)] : ': billing failed, in the grace period');
    else if (sub?.status === 'in_billing_retry') parts.push(': billing failed, Apple is retrying');
    if (e.willRenew === true) parts.push('; renews');
    if (e.willRenew === false) parts.push('; will not renew');
  } else {
    parts.push(`Lapsed: ${from}`);
    if (sub?.status === 'revoked') parts.push(' was refunded or revoked');
    else parts.push(e.expiresAt ? [' ended ', when(e.expiresAt)] : ' ended');
  }
  return h('span', { class: 'why' }, parts);
}

const subscriptionKinds = { active: 'ok', in_grace_period: 'warn', in_billing_retry: 'warn', expired: 'off', revoked: 'bad' };

function subscriptions(customer) {
  const list = customer.subscriptions ?? [];
  if (!list.length) return section('Subscriptions', h('p', { class: 'empty' }, 'No subscriptions.'));
  const rows = list.map((s) => [h('code', {}, s.originalTransactionId), s.productId,
    badge(String(s.status ?? 'unknown').replaceAll('_', ' '), subscriptionKinds[s.status] ?? 'off'),
    when(s.expiresAt), when(s.gracePeriodExpiresAt), s.autoRenew ? 'on' : 'off', s.environment ?? '—']);
  const chains = list.map((s) => chainDetails(s.originalTransactionId));
  return section('Subscriptions',
    table(['Chain', 'Product', 'Status', 'Expires', 'Grace until', 'Auto-renew', 'Environment'], rows, 'Subscriptions'),
    h('p', { class: 'muted' }, 'Each chain as recorded now (transactions and renewal info):'), chains);
}

function chainDetails(otid) {
  const box = h('div', {});
  let loaded = false;
  const details = h('details', { class: 'chain' }, h('summary', {}, 'Chain ', h('code', {}, otid)), box);
  details.addEventListener('toggle', async () => {
    if (!details.open || loaded) return;
    loaded = true;
    box.append(loading('Loading the chain…'));
    try {
      const chain = await api(`/v1/subscriptions/${path(otid)}`);
      clear(box).append(json(chain));
    } catch (error) {
      loaded = false;
      clear(box).append(errorBox(error, 'Loading the chain'));
    }
  });
  return details;
}

function nonConsumables(customer) {
  const list = customer.nonConsumables ?? [];
  if (!list.length) return section('Non-consumables', h('p', { class: 'empty' }, 'No non-consumables.'));
  return section('Non-consumables', table(['Product', 'Status', 'Transaction', 'Purchased', 'Revoked', 'Ownership'],
    list.map((n) => [n.productId, n.revokedAt ? badge('Revoked', 'bad') : badge('Owned', 'ok'),
      h('code', {}, n.transactionId), when(n.purchasedAt), when(n.revokedAt), n.ownership ?? '—']), 'Non-consumables'));
}

function balances(customer) {
  const entries = Object.entries(customer.balances ?? {});
  if (!entries.length) return h('p', { class: 'empty', id: 'no-balances' }, 'No balances.');
  return h('div', { id: 'balances' }, table(['Currency', 'Balance'], entries.map(([currency, amount]) =>
    [h('code', {}, currency), amount < 0 ? [String(amount), ' ', badge('debt', 'bad')] : String(amount)]), 'Balances'));
}