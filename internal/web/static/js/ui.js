// Small DOM helpers shared by the pages: element builder, formatters,
// badges, progress, confirmation dialog, toasts and the cover box.

/**
 * h builds an element: h('a', {href: '#/x', class: 'y', onclick: fn}, 'text', child).
 * Text is always inserted as text, never parsed as HTML.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** replace empties el and appends children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
}

export const fmtNum = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString());

/** fmtDuration renders milliseconds as h:mm:ss, or m:ss under an hour. */
export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return '–';
  const s = Math.round(Number(ms) / 1000);
  const two = (n) => String(n).padStart(2, '0');
  const hours = Math.floor(s / 3600);
  const min = Math.floor((s % 3600) / 60);
  return hours ? `${hours}:${two(min)}:${two(s % 60)}` : `${min}:${two(s % 60)}`;
}

/** fmtResolution is a video's displayed size (rotation applied), naming a rotation. */
export function fmtResolution(v) {
  if (v.width === null || v.width === undefined || v.height === null || v.height === undefined) return 'none (no video stream)';
  return `${v.width}×${v.height}` + (v.rotation ? ` (rotated ${v.rotation}°)` : '');
}

/** fmtTime renders an RFC 3339 timestamp as local time, with its ISO form as a tooltip. */
export function fmtTime(s) {
  if (!s) return '–';
  const d = new Date(s);
  if (isNaN(d)) return s;
  return h('time', { datetime: s, title: s }, d.toLocaleString());
}

const statusClass = {
  completed: 'ok', ready: 'ok', succeeded: 'ok', live: 'ok',
  running: 'warn', pending: 'warn', retryable: 'warn', queued: 'warn',
  failed: 'bad', cancelled: 'muted', missing: 'bad', broken: 'bad', none: 'muted',
};
export const badge = (text, cls) => h('span', { class: 'badge ' + (cls || statusClass[text] || 'muted') }, text);

/** jobPercent is the share done of a job: processed/total when known, else progress. */
export function jobPercent(j) {
  if (j.status === 'completed') return 100;
  if (j.total_items) return Math.min(100, Math.floor((100 * j.processed_items) / j.total_items));
  return Math.round(100 * (j.progress || 0));
}

/** progressBar renders a labelled <progress> for a job. */
export function progressBar(j) {
  const pct = jobPercent(j);
  const label = `job-${j.id}-progress`;
  const total = j.total_items;
  let text;
  if (total !== null && total !== undefined) text = `${fmtNum(j.processed_items)} / ${fmtNum(total)} (${pct}%)`;
  else if (j.status === 'completed') text = 'completed (100%)'; // finished before its first progress report
  else text = `${fmtNum(j.processed_items)} processed (${pct}%)`;
  return h('div', { class: 'progress-wrap' },
    h('progress', { id: label, max: 100, value: pct, 'aria-label': `${j.kind} job ${j.id} progress`, dataset: { pct } }),
    h('span', { class: 'progress-text' }, text));
}

/** errorText is a human message for an ApiError or any thrown value. */
export function errorText(e) {
  if (!e) return '';
  if (e.status === 0) return e.message;
  if (e.code) return `${e.message} (${e.code})`;
  return e.message || String(e);
}

let toastTimer;
/** toast announces a short message (also to screen readers). */
export function toast(text) {
  const el = document.getElementById('toast');
  el.textContent = text;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.textContent = ''; }, 4000);
}

/** confirmDialog asks a yes/no question in a modal <dialog>; resolves true on confirm. */
export function confirmDialog(question, confirmLabel = 'Delete') {
  return new Promise((resolve) => {
    const ok = h('button', { type: 'submit', class: 'danger', value: 'yes' }, confirmLabel);
    const no = h('button', { type: 'submit', class: 'secondary', value: 'no' }, 'Cancel');
    const d = h('dialog', { 'aria-labelledby': 'confirm-q', class: 'confirm' },
      h('form', { method: 'dialog' }, h('p', { id: 'confirm-q' }, question), h('div', { class: 'actions' }, no, ok)));
    d.addEventListener('close', () => { d.remove(); resolve(d.returnValue === 'yes'); });
    document.body.append(d);
    d.showModal();
    no.focus();
  });
}

/** showDialog opens a modal with a title and content, closed by its button or Escape. */
export function showDialog(title, content) {
  const d = h('dialog', { 'aria-labelledby': 'dlg-title' },
    h('h2', { id: 'dlg-title' }, title), content,
    h('form', { method: 'dialog', class: 'actions' }, h('button', { type: 'submit' }, 'Close')));
  d.addEventListener('close', () => d.remove());
  document.body.append(d);
  d.showModal();
  return d;
}

/**
 * cover renders the fixed-size 2:3 cover box of a file view
 * ({id, cover:{status,url}}). The API signs cover URLs, so a plain
 * <img loading="lazy"> loads them without the bearer header, and the
 * browser's cache keeps them (the URL changes when the cover does).
 */
export function cover(file, alt) {
  const c = file.cover || { status: 'none' };
  const box = h('figure', { class: 'cover', dataset: { fileId: file.id } });
  const label = c.url ? 'loading…' : (c.status === 'failed' ? coverFailure(c.error) : c.status === 'none' ? 'no cover' : 'cover ' + c.status);
  box.append(h('span', { class: 'nocover' }, label));
  if (c.url) {
    const img = h('img', { alt: alt || '', loading: 'lazy', decoding: 'async', src: c.url, dataset: { src: c.url } });
    img.addEventListener('load', () => box.querySelector('.nocover')?.remove(), { once: true });
    img.addEventListener('error', () => {
      const n = box.querySelector('.nocover');
      if (n) n.textContent = 'cover unavailable';
    }, { once: true });
    box.prepend(img);
  }
  return box;
}

/**
 * coverFailure says why a cover could not be rendered; a compression
 * method Bindery cannot decode is named ("PPMd inside zip").
 */
export function coverFailure(err) {
  if (!err) return 'cover failed';
  const m = err.code === 'unsupported_compression' && /(zip|7z) method [^(]*\(([^)]+)\)/.exec(err.message || '');
  if (m) return `cover unavailable: ${m[2]} inside ${m[1]} is not supported`;
  return `cover failed: ${err.code}`;
}

/** setCover swaps the cover of a box in place (a thumbnail became ready). */
export function setCover(box, file, alt) {
  box.replaceWith(cover(file, alt));
}

/**
 * moreButton renders a "Load more" button that calls load() (which returns
 * whether more remain) and hides itself when the list is complete.
 */
export function moreButton(load, label = 'Load more') {
  const msg = h('p', { class: 'error', role: 'alert' });
  const btn = h('button', { type: 'button', class: 'secondary' }, label);
  const wrap = h('div', { class: 'more' }, btn, msg);
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    msg.textContent = '';
    try {
      const more = await load();
      wrap.hidden = !more;
    } catch (e) {
      msg.textContent = errorText(e);
    } finally {
      btn.disabled = false;
    }
  });
  return wrap;
}

/** debounce runs fn at most once per ms after the last call. */
export function debounce(fn, ms) {
  let t;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

/** fileName is the last component of a relative path. */
export const fileName = (p) => p.split('/').pop();
