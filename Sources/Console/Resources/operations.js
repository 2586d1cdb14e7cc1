import { h, clear, when, badge, section, table, errorBox, loading, json } from './dom.js';
import { api, path } from './api.js';

export async function renderOperations(main, { isCurrent }) {
  main.append(h('h1', {}, 'Operations'));
  const projections = h('div', { id: 'projections' }, loading('Loading projections…'));
  const replay = h('div', { id: 'replay' });
  const webhooks = h('div', { id: 'webhooks' }, loading('Loading webhooks…'));
  main.append(section('Projections', projections), section('Replay', replayForm(replay), replay),
    section('Webhooks', webhooks));
  await Promise.all([loadProjections(projections, isCurrent), loadWebhooks(webhooks, isCurrent)]);
}

async function loadProjections(box, isCurrent) {
  try {
    const answer = await api('/v1/admin/projections');
    if (!isCurrent()) return;
    clear(box).append(h('p', {}, `Log head: seq ${answer.head}`),
      table(['Projection', 'Mode', 'Version', 'Built', 'Position', 'Lag', 'Updated'],
        (answer.projections ?? []).map((p) => [h('code', {}, p.name), p.mode, String(p.version),
          String(p.builtVersion ?? '—'), String(p.position),
          p.lag > 0 ? badge(`${p.lag} behind`, 'warn') : badge('up to date', 'ok'), when(p.updatedAt)]), 'Projections'));
  } catch (error) {
    if (isCurrent()) clear(box).append(errorBox(error, 'Loading projections'));
  }
}

function replayForm(box) {
  const button = h('button', { type: 'button', id: 'replay-dry-run' }, 'Dry run a replay');
  button.addEventListener('click', async () => {
    button.disabled = true;
    clear(box).append(loading('Replaying every event into scratch tables… nothing changes.'));
    try {
      const report = await api('/v1/admin/replay', { method: 'POST', body: { dryRun: true } });
      clear(box).append(replayReport(report));
    } catch (error) {
      clear(box).append(errorBox(error, 'The replay dry run'));
    } finally {
      button.disabled = false;
    }
  });
  return h('p', {}, button, ' Rebuilds the projections from the log and lists every user whose answer would change.');
}

function replayReport(report) {
  const users = report.changedUsers ?? [];
  return h('div', { id: 'replay-report' },
    h('p', {}, `${report.events} events, ${report.users} users, ${report.durationMs} ms: `,
      users.length ? badge(`${report.changedUserCount ?? users.length} users would change`, 'warn')
        : badge('no user would change', 'ok')),
    users.length ? table(['User', 'Fields', 'Before', 'After'], users.map((u) => [h('code', {}, u.userId),
      (u.fields ?? []).join(', '), json(u.before), json(u.after)]), 'Users whose document would change') : null);
}

async function loadWebhooks(box, isCurrent) {
  let answer;
  try {
    answer = await api('/v1/admin/webhooks');
  } catch (error) {
    if (isCurrent()) clear(box).append(errorBox(error, 'Loading webhooks'));
    return;
  }
  if (!isCurrent()) return;
  clear(box);
  const endpoints = answer.endpoints ?? [];
  if (!endpoints.length) {
    box.append(h('p', { class: 'empty', id: 'webhooks-none' }, badge('not configured', 'off'),
      ' No webhook endpoints are configured (the config file\u2019s "webhooks").'));
    return;
  }
  for (const endpoint of endpoints) box.append(endpointCard(endpoint));
}

function endpointCard(endpoint) {
  const c = endpoint.counts ?? {};
  const deliveries = h('div', {});
  const showDead = h('button', { type: 'button', class: 'secondary' }, 'Show dead deliveries');
  const redeliverDead = h('button', { type: 'button', disabled: !(c.dead > 0) }, 'Redeliver all dead');
  showDead.addEventListener('click', () => loadDeliveries(deliveries, endpoint.name));
  redeliverDead.addEventListener('click', () => redeliver(deliveries, endpoint.name, { status: 'dead' }));
  return h('div', { class: 'endpoint' }, h('h3', {}, endpoint.name, ' ', h('span', { class: 'muted' }, endpoint.url)),
    h('p', {}, badge(`${c.pending ?? 0} pending`, c.pending ? 'warn' : 'ok'), ' ',
      badge(`${c.dead ?? 0} dead`, c.dead ? 'bad' : 'ok'), ' ', badge(`${c.failed ?? 0} failing`, c.failed ? 'warn' : 'ok'), ' ',
      badge(`${c.delivered ?? 0} delivered`, 'info'),
      endpoint.oldestPendingSeconds ? ` oldest pending ${endpoint.oldestPendingSeconds} s` : ''),
    h('p', { class: 'buttons' }, showDead, ' ', redeliverDead), deliveries);
}

async function loadDeliveries(box, name) {
  clear(box).append(loading('Loading dead deliveries…'));
  try {
    const answer = await api(`/v1/admin/webhooks/${path(name)}/deliveries?status=dead&limit=100`);
    const list = answer.deliveries ?? [];
    clear(box).append(list.length ? table(['Change', 'User', 'Attempts', 'Queued', 'Last error', ''],
      list.map((d) => {
        const last = (d.attempts ?? []).at(-1);
        return [h('code', {}, d.id), d.userId ?? '—', String(d.attemptCount), when(d.queuedAt),
          last ? `${last.httpStatus ?? ''} ${last.error ?? ''}`.trim() || '—' : '—',
          h('button', { type: 'button', class: 'secondary',
            onclick: () => redeliver(box, name, { ids: [d.id] }) }, 'Redeliver')];
      }), 'Dead deliveries') : h('p', { class: 'empty' }, 'No dead deliveries.'));
  } catch (error) {
    clear(box).append(errorBox(error, 'Loading deliveries'));
  }
}

async function redeliver(box, name, body) {
  try {
    const answer = await api(`/v1/admin/webhooks/${path(name)}/redeliver`, { method: 'POST', body });
    clear(box).append(h('p', { role: 'status' }, badge('queued', 'ok'), ` ${JSON.stringify(answer)}`));
  } catch (error) {
    clear(box).append(errorBox(error, 'Redelivery'));
  }
}