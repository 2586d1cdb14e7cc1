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