extension ConsoleAssets {
    /// DOM helpers: every node is built with createElement and text nodes, so data is never parsed as HTML.
    static let dom = #"""
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
        """#

    /// The one way the page talks to the service: the public JSON API with the session's key.
    static let api = #"""
        const KEY = 'iap-ledger.apiKey';

        export const session = {
          get key() { return sessionStorage.getItem(KEY); },
          set(key) { sessionStorage.setItem(KEY, key); },
          clear() { sessionStorage.removeItem(KEY); },
        };

        export class ApiError extends Error {
          constructor(status, code, detail) {
            super(detail);
            this.status = status;
            this.code = code;
            this.detail = detail;
          }
        }

        const refusedListeners = [];
        /** Called when the service refuses the key (401): wrong, revoked or expired mid-session. */
        export function onKeyRefused(listener) { refusedListeners.push(listener); }

        export async function api(path, { method = 'GET', body, key = session.key, signal } = {}) {
          if (!key) throw new ApiError(401, 'no_key', 'No API key has been entered.');
          const headers = { Authorization: `Bearer ${key}`, Accept: 'application/json' };
          if (body !== undefined) headers['Content-Type'] = 'application/json';
          let response;
          try {
            response = await fetch(path, {
              method, headers, body: body === undefined ? undefined : JSON.stringify(body),
              cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer', signal,
            });
          } catch (error) {
            throw new ApiError(0, 'network', `The service could not be reached (${error.message}).`);
          }
          const text = await response.text();
          let data = null;
          if (text) {
            try { data = JSON.parse(text); } catch { data = null; }
          }
          if (!response.ok) {
            const detail = data?.detail ?? data?.title ?? `HTTP ${response.status}`;
            const error = new ApiError(response.status, data?.code ?? `http_${response.status}`, detail);
            if (response.status === 401 && key === session.key) refusedListeners.forEach((f) => f(error));
            throw error;
          }
          return data;
        }

        export const path = (...parts) => parts.map((p) => encodeURIComponent(p)).join('/');
        """#

    /// Sign-in, the key's lifetime, navigation and hash routing.
    static let app = #"""
        import { h, clear, errorBox, when } from './dom.js';
        import { api, session, onKeyRefused } from './api.js';
        import { renderCustomer } from './customer.js';
        import { renderOverview } from './overview.js';
        import { renderOperations } from './operations.js';

        const main = document.getElementById('main');
        const login = document.getElementById('login');
        const loginForm = document.getElementById('login-form');
        const keyInput = document.getElementById('api-key');
        const loginError = document.getElementById('login-error');
        const notice = document.getElementById('notice');
        const logout = document.getElementById('logout');
        const unconfigured = document.getElementById('unconfigured');

        /**
         * The warning banner of purchases of products missing from the catalog (api.md §1): they
         * are recorded and grant an entitlement named by their own product id, which nobody
         * notices unless told. Admin keys only; another key (403) or an error just hides it.
         */
        async function showUnconfigured() {
          let products = [];
          try {
            products = (await api('/v1/admin/catalog/unconfigured'))?.products ?? [];
          } catch {
            products = [];
          }
          clear(unconfigured);
          unconfigured.hidden = products.length === 0;
          if (products.length === 0) return;
          const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
          unconfigured.append(
            h('strong', null, `Products missing from the catalog were purchased (${products.length}).`),
            " They are recorded and grant an entitlement named by their own product id: add them to the config's products, or correct the product id.",
            h('ul', null, products.map((p) => h('li', null,
              h('code', null, p.productId), ` in ${p.bundleId}: ${plural(p.transactions, 'transaction')}, ${plural(p.users, 'user')}, first `,
              when(p.firstSeen), ', last ', when(p.lastSeen)))));
        }

        function showNotice(text) {
          notice.textContent = text;
          notice.hidden = !text;
        }

        /**
         * Shows the sign-in form. Without a message the form keeps the one it shows: a refused key's
         * reason must survive whatever runs next (a navigation, an older page's request).
         */
        function askForKey(message) {
          login.hidden = false;
          logout.hidden = true;
          if (message !== undefined) loginError.textContent = message;
          keyInput.value = '';
          keyInput.focus();
        }

        onKeyRefused((error) => {
          session.clear();
          showNotice('');
          askForKey(`The service no longer accepts this API key (${error.status} ${error.code}): it is wrong, revoked or expired. Enter a key to continue.`);
        });

        loginForm.addEventListener('submit', async (event) => {
          event.preventDefault();
          const key = keyInput.value.trim();
          if (!key) return;
          loginError.textContent = 'Checking the key…';
          try {
            // Any answer but 401 means the key exists; 403 only says it lacks this scope.
            await api('/v1/changes?limit=1', { key });
          } catch (error) {
            if (error.status === 401 || error.status === 0) {
              loginError.textContent = error.status === 401
                ? `The service refused this API key (401 ${error.code}): it is wrong, revoked or expired.`
                : error.detail;
              return;
            }
          }
          session.set(key);
          login.hidden = true;
          logout.hidden = false;
          loginError.textContent = '';
          route();
          showUnconfigured();
          main.focus();
        });

        logout.addEventListener('click', () => {
          session.clear();
          clear(main);
          clear(unconfigured);
          unconfigured.hidden = true;
          askForKey('The key was forgotten.');
        });

        /** `#/page/arg?x=y` → { page, args, params }. */
        export function parseHash() {
          const raw = location.hash.replace(/^#\/?/, '');
          const [pathPart, query = ''] = raw.split('?');
          const [page = 'customer', ...args] = pathPart.split('/').map((p) => {
            try { return decodeURIComponent(p); } catch { return p; }
          });
          return { page: page || 'customer', args, params: new URLSearchParams(query) };
        }

        const pages = { customer: renderCustomer, overview: renderOverview, operations: renderOperations };

        let generation = 0;
        async function route() {
          if (!session.key) { askForKey(); return; }
          const { page, args, params } = parseHash();
          for (const link of document.querySelectorAll('nav a')) {
            if (link.dataset.page === page) link.setAttribute('aria-current', 'page');
            else link.removeAttribute('aria-current');
          }
          const render = pages[page];
          const mine = ++generation;
          // A stale render (the user navigated on) must not draw over the new page.
          const isCurrent = () => mine === generation;
          clear(main);
          if (!render) {
            main.append(errorBox({ detail: `There is no page "${page}".` }, 'Navigation'));
            return;
          }
          try {
            await render(main, { args, params, isCurrent });
          } catch (error) {
            if (isCurrent()) main.append(errorBox(error, 'This page'));
          }
        }

        window.addEventListener('hashchange', route);
        if (session.key) {
          login.hidden = true; logout.hidden = false; route(); showUnconfigured();
        } else { clear(main); askForKey(); }
        """#
}
