export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

const SVG = 'http://www.w3.org/2000/svg';
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG, tag), attrs, children);
}

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.setAttribute('class', value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

const localFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A time in the browser's zone, its UTC form on hover (title) and in datetime. */
export function when(iso) {
  if (iso === null || iso === undefined || iso === '') return h('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h('span', {}, String(iso));
  return h('time', { datetime: date.toISOString(), title: `UTC ${date.toISOString()}` }, localFormat.format(date));
}

/** A status badge: the word is always there, colour only repeats it. */
export function badge(text, kind) {
  return h('span', { class: `badge badge-${kind}` }, text);
}

export function section(title, ...children) {
  const id = `h-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

export function table(headers, rows, caption) {
  return h('div', { class: 'table-wrap' },
    h('table', {},
      caption ? h('caption', { class: 'sr-only' }, caption) : null,
      h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((c) => h('td', {}, c)))))));
}

export function errorBox(error, what) {
  const status = error?.status ? ` (${error.status}${error.code ? ' ' + error.code : ''})` : '';
  return h('div', { class: 'error-box', role: 'alert' },
    h('strong', {}, `${what} failed${status}: `), String(error?.detail ?? error?.message ?? error));
}

export function loading(text) {
  return h('p', { class: 'loading', role: 'status' }, text);
}

/** Goes to a hash route; the same route again re-renders (a hashchange would not fire). */
export function navigate(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

export function json(value) {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

/** Parses RFC 3339, or a date and time without zone as the browser's local time. */
export function parseInstant(text) {
  const t = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?(Z|[+-]\d{2}:\d{2})?$/i.test(t)) return null;
  const normal = t.replace(' ', 'T');
  const date = new Date(/T/.test(normal) ? normal : `${normal}T00:00`);
  return Number.isNaN(date.getTime()) ? null : date;
}