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