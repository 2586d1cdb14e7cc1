import { h, clear, when, badge, section, table, errorBox, parseInstant, navigate } from './dom.js';
import { api, path } from './api.js';

const DURATION = /^P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?$/;

/** A fresh idempotency key (getRandomValues works outside secure contexts too). */
function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export function renderGrants(userId, customer) {
  // One key per grant the form makes: a double submit or a retry grants once.
  let idempotencyKey = newKey();
  const result = h('div', { id: 'grant-result', role: 'status' });
  const list = h('div', { id: 'grant-list' });
  const entitlement = h('input', { id: 'grant-entitlement', name: 'entitlement', type: 'text', required: true,
    list: 'grant-known', autocomplete: 'off' });
  const known = h('datalist', { id: 'grant-known' },
    Object.keys(customer.entitlements ?? {}).map((name) => h('option', { value: name })));
  const mode = h('select', { id: 'grant-mode', name: 'mode' },
    h('option', { value: 'duration' }, 'for (ISO 8601 duration)'), h('option', { value: 'until' }, 'until (time)'));
  const amount = h('input', { id: 'grant-amount', name: 'amount', type: 'text', value: 'P7D', required: true });
  const reason = h('input', { id: 'grant-reason', name: 'reason', type: 'text', maxlength: 500 });
  const submit = h('button', { type: 'submit', id: 'grant-submit' }, 'Grant');
  const form = h('form', { class: 'grant-form', 'aria-label': 'Grant an entitlement' },
    h('div', { class: 'field' }, h('label', { for: 'grant-entitlement' }, 'Entitlement'), entitlement, known),
    h('div', { class: 'field' }, h('label', { for: 'grant-mode' }, 'Length'), mode),
    h('div', { class: 'field' }, h('label', { for: 'grant-amount' }, 'Duration or time'), amount),
    h('div', { class: 'field' }, h('label', { for: 'grant-reason' }, 'Reason (optional)'), reason),
    h('div', { class: 'buttons' }, submit), result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clear(result);
    const body = { entitlement: entitlement.value.trim() };
    const value = amount.value.trim();
    if (!body.entitlement) { result.append(errorBox({ detail: 'Name the entitlement to grant.' }, 'Granting')); return; }
    if (mode.value === 'duration') {
      if (!DURATION.test(value) || value === 'P') {
        result.append(errorBox({ detail: `"${value}" is not a duration such as P7D, P1M or P1Y.` }, 'Granting'));
        return;
      }
      body.duration = value;
    } else {
      const until = parseInstant(value);
      if (!until) { result.append(errorBox({ detail: `"${value}" is not a time.` }, 'Granting')); return; }
      body.until = until.toISOString();
    }
    if (reason.value.trim()) body.reason = reason.value.trim();
    body.idempotencyKey = idempotencyKey;
    submit.disabled = true;
    try {
      const granted = await api(`/v1/users/${path(userId)}/grants`, { method: 'POST', body });
      result.append(h('p', { class: 'ok' }, badge('Granted', 'ok'), ` ${granted.entitlement} until `,
        when(granted.expiresAt), ` (grant ${granted.grantId}).`));
      idempotencyKey = newKey();
      navigate(location.hash);
    } catch (error) {
      result.append(errorBox(error, 'Granting'));
    } finally {
      submit.disabled = false;
    }
  });
  loadGrants(list, userId);
  return section('Promotional grants', form, h('h3', {}, 'Grants recorded'), list);
}

/** The user's grants and revocations, read from the newest events (a grant is an event with a grantId). */
async function loadGrants(list, userId) {
  let events;
  try {
    events = (await api(`/v1/users/${path(userId)}/events?before=9223372036854775807&limit=1000`)).events ?? [];
  } catch (error) {
    list.append(errorBox(error, 'Loading grants'));
    return;
  }
  const grants = new Map();
  for (const event of [...events].reverse()) {
    const id = event.data?.grantId;
    if (!id) continue;
    if (/revoke/i.test(event.type)) {
      const grant = grants.get(id);
      if (grant) grant.revokedAt = event.recordedAt;
    } else if (/grant/i.test(event.type)) {
      grants.set(id, { id, entitlement: event.data.entitlement, expiresAt: event.data.expiresAt,
        reason: event.data.reason, grantedAt: event.recordedAt, revokedAt: null });
    }
  }
  if (!grants.size) { list.append(h('p', { class: 'empty' }, 'No promotional grants.')); return; }
  const now = Date.now();
  list.append(table(['Grant', 'Entitlement', 'Status', 'Granted', 'Until', 'Reason', ''],
    [...grants.values()].reverse().map((g) => {
      const lapsed = g.expiresAt && new Date(g.expiresAt).getTime() <= now;
      const status = g.revokedAt ? badge('Revoked', 'off') : lapsed ? badge('Expired', 'off') : badge('Active', 'ok');
      const revoke = g.revokedAt || lapsed ? '' : h('button', { type: 'button', class: 'danger revoke',
        'data-grant': g.id, onclick: (e) => revokeGrant(e.currentTarget, userId, g.id) }, `Revoke ${g.entitlement ?? ''}`);
      return [h('code', {}, g.id), g.entitlement ?? '—', status, when(g.grantedAt), when(g.expiresAt), g.reason ?? '', revoke];
    }), 'Promotional grants'));
}

async function revokeGrant(button, userId, grantId) {
  button.disabled = true;
  try {
    await api(`/v1/users/${path(userId)}/grants/${path(grantId)}`, { method: 'DELETE' });
    navigate(location.hash);
  } catch (error) {
    button.disabled = false;
    button.after(errorBox(error, 'Revoking'));
  }
}