// The dashboard shell: sign-in, hash routing between pages, and the one
// event stream every page listens to. Pages are modules exporting
// render(root, ctx), loaded on first visit; ctx.on(type, fn) subscribes to
// stream events for as long as the page is shown.

import { ApiError, EventStream, api, clearToken, onUnauthorized, setToken, token } from './api.js';
import { errorText, h } from './ui.js';

const pages = {
  overview: () => import('./pages/overview.js'),
  libraries: () => import('./pages/libraries.js'),
  browse: () => import('./pages/browse.js'),
  jobs: () => import('./pages/jobs.js'),
  duplicates: () => import('./pages/duplicates.js'),
  samebook: () => import('./pages/samebook.js'),
  settings: () => import('./pages/settings.js'),
  maintenance: () => import('./pages/maintenance.js'),
  read: () => import('./pages/read.js'),
  search: () => import('./pages/search.js'),
};

const $ = (id) => document.getElementById(id);
const listeners = new Map(); // type → Set(fn) of the current page
let stream = null;
let cleanup = null;
let renderSeq = 0;

function dispatch(ev) {
  for (const fn of listeners.get(ev.type) || []) {
    try { fn(ev.data); } catch (e) { console.error(e); }
  }
  for (const fn of listeners.get('*') || []) fn(ev);
}

function setLive(state) {
  const el = $('live');
  el.classList.toggle('on', state === 'live');
  el.textContent = state === 'live' ? 'live' : state === 'reconnecting' ? 'reconnecting…' : 'offline';
}

/** route parses "#/jobs?status=running" into {name, params}. */
export function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const name = pages[path] ? path : 'overview';
  return { name, params: new URLSearchParams(query || '') };
}

/** navigate changes the page's query without a new history entry per filter. */
export function navigate(name, params, replace = true) {
  const q = new URLSearchParams(Object.entries(params || {}).filter(([, v]) => v !== '' && v != null)).toString();
  const url = '#/' + name + (q ? '?' + q : '');
  if (replace) history.replaceState(null, '', url);
  else location.hash = url;
}

async function show() {
  if (!token()) return signedOut();
  const seq = ++renderSeq;
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  listeners.clear();
  const { name, params } = route();
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.getAttribute('href') === '#/' + name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = $('page');
  delete document.body.dataset.page;
  root.replaceChildren(h('p', { class: 'hint' }, 'Loading…'));
  root.setAttribute('aria-busy', 'true');
  const ctx = {
    params,
    on(type, fn) {
      if (!listeners.has(type)) listeners.set(type, new Set());
      listeners.get(type).add(fn);
    },
    navigate,
    current: () => seq === renderSeq,
  };
  try {
    const mod = await pages[name]();
    if (seq !== renderSeq) return;
    root.replaceChildren();
    document.title = mod.title + ' · Bindery';
    cleanup = (await mod.render(root, ctx)) || null;
    // Markers for tests and for people timing the dashboard: which page
    // finished rendering, and when (ms since navigation start).
    document.body.dataset.page = name;
    document.body.dataset.readyMs = String(Math.round(performance.now()));
  } catch (e) {
    if (seq !== renderSeq) return;
    console.error(e);
    root.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'This page could not load: ' + errorText(e)));
  } finally {
    if (seq === renderSeq) root.removeAttribute('aria-busy');
  }
}

function signedOut(message) {
  if (stream) { stream.stop(); stream = null; }
  if (cleanup) { try { cleanup(); } catch { /* ignore */ } cleanup = null; }
  listeners.clear();
  renderSeq++;
  $('page').replaceChildren();
  $('nav').hidden = true;
  $('session').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message || '';
  document.title = 'Sign in · Bindery';
  $('token').focus();
}

function signedIn() {
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('session').hidden = false;
  if (!stream) {
    stream = new EventStream(dispatch, setLive);
    stream.start();
  }
  show();
}

async function signIn(ev) {
  ev.preventDefault();
  const input = $('token');
  const err = $('signin-error');
  const t = input.value.trim();
  err.textContent = '';
  if (!t) {
    err.textContent = 'Enter the admin token.';
    input.setAttribute('aria-invalid', 'true');
    return;
  }
  const btn = ev.target.querySelector('button');
  btn.disabled = true;
  setToken(t);
  try {
    // Any authenticated route proves the token; this one is small.
    await api('GET', '/workers', undefined, { noSignOut: true });
    input.value = '';
    input.removeAttribute('aria-invalid');
    signedIn();
  } catch (e) {
    clearToken();
    input.setAttribute('aria-invalid', 'true');
    err.textContent = e instanceof ApiError && e.status === 401
      ? 'Wrong token: controld refused it (401). Check the admin.token file or BINDERY_ADMIN_TOKEN.'
      : 'Sign-in failed: ' + errorText(e);
    input.focus();
  } finally {
    btn.disabled = false;
  }
}

function init() {
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', () => { clearToken(); signedOut('Signed out.'); });
  onUnauthorized(() => {
    if (!token()) return;
    clearToken();
    signedOut('Your token was refused (401): sign in again.');
  });
  window.addEventListener('hashchange', () => { if (token()) show(); });
  if (token()) signedIn();
  else signedOut();
}

init();
