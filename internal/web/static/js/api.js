// The dashboard's only link to controld: the public admin API under
// /api/v1, with the admin token as a bearer header on every request
// (including the event stream and the covers, which therefore go through
// fetch and never through a URL that could carry the token).

const KEY = 'bindery.token';
export const BASE = '/api/v1';

export const token = () => sessionStorage.getItem(KEY) || '';
export const setToken = (t) => sessionStorage.setItem(KEY, t);
export const clearToken = () => sessionStorage.removeItem(KEY);

/** ApiError is a non-2xx answer: status, the API's error code, message and details. */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code || '';
    this.details = details || {};
  }
}

// Listeners told when the token is refused (the app signs out).
const unauthorized = new Set();
export const onUnauthorized = (fn) => unauthorized.add(fn);

function authHeaders(extra) {
  return Object.assign({ Authorization: 'Bearer ' + token() }, extra);
}

/**
 * api sends one request and returns {status, body}. A JSON body is sent for
 * objects; a 401 calls the unauthorized listeners and throws; any other
 * non-2xx throws an ApiError carrying the server's code and details.
 */
export async function api(method, path, body, opts = {}) {
  const init = { method, headers: authHeaders({ Accept: 'application/json' }), signal: opts.signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(BASE + path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network_error', 'controld cannot be reached: ' + e.message);
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (res.ok) return { status: res.status, body: data };
  const err = (data && data.error) || {};
  const ae = new ApiError(res.status, err.code, err.message || res.statusText, err.details);
  if (res.status === 401 && !opts.noSignOut) unauthorized.forEach((fn) => fn(ae));
  throw ae;
}

export const get = async (path, opts) => (await api('GET', path, undefined, opts)).body;

/** qs renders a query string, skipping empty values. */
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  }
  const s = p.toString();
  return s ? '?' + s : '';
}

/**
 * Pager walks a keyset list: next() fetches the following page and returns
 * its items; done is true once next_cursor is null.
 */
export class Pager {
  constructor(path, params = {}, limit = 50) {
    this.path = path;
    this.params = params;
    this.limit = limit;
    this.cursor = null;
    this.done = false;
  }
  async next(opts) {
    if (this.done) return [];
    const page = await get(this.path + qs({ ...this.params, limit: this.limit, cursor: this.cursor }), opts);
    this.cursor = page.next_cursor;
    this.done = !page.next_cursor;
    this.status = page.status;
    return page.items || [];
  }
}

/**
 * EventStream reads GET /api/v1/events (Server-Sent Events) with fetch, so
 * that the bearer header can be sent (EventSource cannot send headers, and
 * a token in the URL would end up in logs). It reconnects after the
 * server's retry interval when the stream ends; onState hears "live",
 * "reconnecting" and "stopped"; after a reconnect onEvent gets a synthetic
 * {type:"reconnected"} so pages reload what they may have missed.
 */
export class EventStream {
  constructor(onEvent, onState) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.retry = 3000;
    this.ctl = null;
    this.stopped = false;
    this.connections = 0;
  }
  start() {
    this.stopped = false;
    this.loop();
  }
  stop() {
    this.stopped = true;
    if (this.ctl) this.ctl.abort();
    this.onState('stopped');
  }
  async loop() {
    let failures = 0;
    while (!this.stopped) {
      this.ctl = new AbortController();
      try {
        await this.read(this.ctl.signal);
        failures = 0;
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof ApiError && e.status === 401) {
          unauthorized.forEach((fn) => fn(e));
          return;
        }
        failures++;
      }
      if (this.stopped) return;
      this.onState('reconnecting');
      // The server's retry interval, growing while controld stays away.
      const wait = Math.min(this.retry * Math.max(1, failures), 30000);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
  async read(signal) {
    const res = await fetch(BASE + '/events', {
      headers: authHeaders({ Accept: 'text/event-stream' }), signal, cache: 'no-store',
    });
    if (!res.ok) throw new ApiError(res.status, 'http_' + res.status, res.statusText);
    this.connections++;
    this.onState('live');
    if (this.connections > 1) this.onEvent({ type: 'reconnected', data: null });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let ev = { type: '', data: [] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        ev = this.line(line, ev);
      }
    }
  }
  // line applies one line of the SSE format and returns the event being built.
  line(line, ev) {
    if (line === '') {
      if (ev.data.length) {
        const text = ev.data.join('\n');
        let data = text;
        try { data = JSON.parse(text); } catch { /* keep text */ }
        this.onEvent({ type: ev.type || 'message', data });
      }
      return { type: '', data: [] };
    }
    if (line.startsWith(':')) return ev;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') ev.type = value;
    else if (field === 'data') ev.data.push(value);
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
    return ev;
  }
}
