// Libraries: the list with counts and the last scan, the add form (the
// server validates the path; its errors are shown next to the field they
// name), what each library indexes (comics, or comics and video; changed
// in place), how the change watcher follows it (auto, inotify, poll, off;
// what runs and why), Scan now / Hash now / Scan one folder, and delete
// behind a confirmation.

import { Pager, api, get } from '../api.js';
import { badge, confirmDialog, debounce, errorText, fmtNum, fmtTime, h, moreButton, replace, toast } from '../ui.js';

export const title = 'Libraries';

// What a library indexes (libraries.media), the API's value first.
const MEDIA = [['comics+video', 'comics + video'], ['comics', 'comics only']];
const mediaOptions = (current) => MEDIA.map(([v, label]) => h('option', { value: v, selected: v === current }, label));
// How controld's watcher follows a library (libraries.watch).
const WATCH = ['auto', 'inotify', 'poll', 'off'];
const watchOptions = (current) => WATCH.map((v) => h('option', { value: v, selected: v === current }, v));
// watcherText says what the watcher runs and why (GET /libraries/{id}).
const watcherText = (w) => {
  if (!w) return '';
  let s = w.active + (w.reason ? ` · ${w.reason}` : '');
  if (w.watch_limit_short) s += ` · needs ${fmtNum(w.folders)} watches, limit ${fmtNum(w.max_user_watches)}`;
  return s;
};

export async function render(root, ctx) {
  const tbody = h('tbody', {});
  const table = h('div', { class: 'table-wrap' }, h('table', { id: 'libraries' },
    h('caption', { class: 'hint' }, 'Counts come from the last scan; covers and hashes follow it.'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Path'),
      h('th', { scope: 'col', class: 'num' }, 'Files'), h('th', { scope: 'col', class: 'num' }, 'Missing'),
      h('th', { scope: 'col', class: 'num' }, 'Series'), h('th', { scope: 'col' }, 'Media'), h('th', { scope: 'col' }, 'Watch'),
      h('th', { scope: 'col' }, 'Last scan'),
      h('th', { scope: 'col' }, 'Actions'))),
    tbody));
  const empty = h('p', { class: 'hint', hidden: true }, 'No library yet: add one above.');
  root.append(h('h1', {}, 'Libraries'), addForm(async (lib) => { empty.hidden = true; tbody.prepend(await row(lib.id)); }),
    h('h2', {}, 'All libraries'), empty, table);

  const rows = new Map(); // id → <tr>
  async function row(id) {
    const lib = await get(`/libraries/${id}`);
    const msg = h('span', { class: 'msg', role: 'status' });
    const last = lib.last_scan;
    const media = h('select', { class: 'media', name: 'media', 'aria-label': `Media of ${lib.name}`,
      onchange: () => setMedia(lib, media, msg) }, mediaOptions(lib.media));
    const watch = h('select', { class: 'watch', name: 'watch', 'aria-label': `Watch mode of ${lib.name}`,
      onchange: () => setWatch(lib, watch, watcherHint, msg) }, watchOptions(lib.watch));
    const watcherHint = h('span', { class: 'hint watcher' }, watcherText(lib.watcher));
    const folder = h('input', { class: 'scan-folder', name: 'folder', placeholder: 'Batman (2016)/',
      'aria-label': `Folder of ${lib.name} to scan` });
    const tr = h('tr', { dataset: { libraryId: lib.id } },
      h('th', { scope: 'row' }, h('a', { href: `#/browse?library=${lib.id}` }, lib.name)),
      h('td', { class: 'mono' }, lib.path),
      h('td', { class: 'num' }, fmtNum(lib.file_count)),
      h('td', { class: 'num' }, fmtNum(lib.missing_count)),
      h('td', { class: 'num' }, fmtNum(lib.series_count)),
      h('td', {}, media),
      h('td', {}, watch, h('br'), watcherHint),
      h('td', {}, last ? [badge(last.status), ' ', fmtTime(last.finished_at || last.started_at),
        h('br'), h('span', { class: 'hint' }, summary(last.counts))] : h('span', { class: 'hint' }, 'never scanned')),
      h('td', {}, h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: () => request('scan', lib, msg) }, 'Scan now'),
        h('button', { type: 'button', class: 'secondary', onclick: () => request('hash', lib, msg) }, 'Hash now'),
        folder, h('button', { type: 'button', class: 'secondary scan-folder-button',
          onclick: () => request('scan', lib, msg, [folder.value]) }, 'Scan folder'),
        h('button', { type: 'button', class: 'danger', onclick: () => remove(lib, msg) }, 'Delete')), msg));
    const old = rows.get(lib.id);
    rows.set(lib.id, tr);
    if (old && old.isConnected) old.replaceWith(tr);
    return tr;
  }

  // request asks for a scan or hash job; paths scopes a scan to folders.
  async function request(kind, lib, msg, paths) {
    msg.textContent = '';
    try {
      const body = { kind, library_id: lib.id };
      if (paths) body.paths = paths;
      const r = await api('POST', '/jobs', body);
      if (r.body.queued) {
        msg.textContent = `${kind} ${r.status === 202 ? 'queued' : 'already queued'} (position ${r.body.queued.position})`;
      } else if (r.status === 200) msg.textContent = `${kind} already ${r.body.status || 'requested'} (job ${r.body.id})`;
      else msg.textContent = `${kind} job ${r.body.id} started`;
      msg.append(' · ', h('a', { href: '#/overview' }, 'watch'));
    } catch (e) {
      msg.textContent = errorText(e);
    }
  }

  // setMedia sends the new media; on a refusal the select shows the saved one again.
  async function setMedia(lib, select, msg) {
    msg.textContent = '';
    select.disabled = true;
    try {
      const r = await api('PATCH', `/libraries/${lib.id}`, { media: select.value });
      lib.media = r.body.media;
      msg.textContent = lib.media === 'comics'
        ? 'Comics only: the next scan skips video files (those indexed become missing).'
        : 'Comics and video: the next scan indexes video files too.';
    } catch (e) {
      select.value = lib.media;
      msg.textContent = errorText(e);
    } finally {
      select.disabled = false;
    }
  }

  // setWatch sends the new watch mode; on a refusal the select shows the saved one again.
  async function setWatch(lib, select, hint, msg) {
    msg.textContent = '';
    select.disabled = true;
    try {
      const r = await api('PATCH', `/libraries/${lib.id}`, { watch: select.value });
      lib.watch = r.body.watch;
      hint.textContent = 'controld applies it within seconds';
      msg.textContent = lib.watch === 'off' ? 'Not watched: new books wait for a scan.' : `Watch: ${lib.watch}.`;
    } catch (e) {
      select.value = lib.watch;
      msg.textContent = errorText(e);
    } finally {
      select.disabled = false;
    }
  }

  async function remove(lib, msg) {
    if (!(await confirmDialog(`Delete library “${lib.name}”? Its index rows and cached covers are removed; the files in ${lib.path} are not touched.`))) return;
    try {
      await api('DELETE', `/libraries/${lib.id}`);
      rows.get(lib.id)?.remove();
      rows.delete(lib.id);
      empty.hidden = rows.size > 0;
      toast(`Library ${lib.name} deleted.`);
    } catch (e) {
      msg.textContent = errorText(e);
    }
  }

  const pager = new Pager('/libraries', {}, 50);
  const loadPage = async () => {
    const libs = await pager.next();
    const trs = await Promise.all(libs.map((l) => row(l.id)));
    tbody.append(...trs);
    empty.hidden = rows.size > 0;
    return !pager.done;
  };
  const more = moreButton(loadPage);
  root.append(more);
  more.hidden = !(await loadPage());

  // Scans change the counts: redraw a library's row when its job ends.
  const pending = new Set();
  const redraw = debounce(() => { for (const id of pending) if (rows.has(id)) row(id).catch(() => {}); pending.clear(); }, 300);
  ctx.on('job', (j) => {
    if (j.library_id && ['completed', 'failed', 'cancelled'].includes(j.status)) { pending.add(j.library_id); redraw(); }
  });
}

function summary(counts) {
  if (!counts) return '';
  return Object.entries(counts).filter(([, v]) => v).map(([k, v]) => `${k.replaceAll('_', ' ')} ${fmtNum(v)}`).join(' · ');
}

/** addForm is the "Add a library" form; onAdded gets the created library. */
function addForm(onAdded) {
  const field = (name, label, attrs, hint, options) => {
    const id = 'lib-' + name;
    const err = h('p', { class: 'error', id: id + '-error', role: 'alert' });
    const input = h(options ? 'select' : 'input', { id, name, 'aria-describedby': id + '-error' + (hint ? ` ${id}-hint` : ''), ...attrs }, options);
    return { input, err, el: h('div', { class: 'field' }, h('label', { for: id }, label), input,
      hint ? h('p', { class: 'hint', id: id + '-hint' }, hint) : null, err) };
  };
  const name = field('name', 'Name', { required: true, autocomplete: 'off' });
  const path = field('path', 'Path on the server', { required: true, class: 'mono', autocomplete: 'off', spellcheck: 'false' },
    'An existing folder under one of controld’s library roots.');
  const interval = field('scan_interval_minutes', 'Scan every (minutes)', { type: 'number', min: 0, inputmode: 'numeric' },
    '0 or empty: scan only on request.');
  const media = field('media', 'Media', {}, 'Comics only: video files are not indexed.', mediaOptions(''));
  const general = h('p', { class: 'error', role: 'alert' });
  const fields = { name, path, scan_interval_minutes: interval, media };
  const submit = h('button', { type: 'submit' }, 'Add library');
  const form = h('form', { id: 'add-library', novalidate: true, class: 'panel' },
    h('h2', { class: 'first' }, 'Add a library'),
    h('div', { class: 'row' }, name.el, path.el, interval.el, media.el), general, submit);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    general.textContent = '';
    for (const f of Object.values(fields)) { f.err.textContent = ''; f.input.removeAttribute('aria-invalid'); }
    const body = { name: name.input.value, path: path.input.value, media: media.input.value };
    if (interval.input.value !== '') body.scan_interval_minutes = Number(interval.input.value);
    submit.disabled = true;
    try {
      const r = await api('POST', '/libraries', body);
      form.reset();
      toast(`Library ${r.body.name} added.`);
      await onAdded(r.body);
    } catch (e) {
      const f = fields[e.details && e.details.field];
      if (f) {
        f.err.textContent = errorText(e);
        f.input.setAttribute('aria-invalid', 'true');
        f.input.focus();
      } else {
        general.textContent = errorText(e);
      }
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
