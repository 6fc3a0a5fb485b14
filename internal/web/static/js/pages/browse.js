// Browse: a library's series, then the files of one series (or all files)
// in a grid of covers. Covers sit in fixed 2:3 boxes and load lazily, so a
// page of many files renders at once and nothing shifts as they arrive;
// pages of files load on demand. Thumbnail events swap a cover in place
// when it becomes ready. Below: the errors of the library's last scan.

import { Pager, api, get } from '../api.js';
import { badge, cover, errorText, fileName, fmtBytes, fmtDuration, fmtNum, fmtResolution, fmtTime, h, moreButton, replace, setCover, showDialog } from '../ui.js';

export const title = 'Browse';

const PAGE = 100;

export async function render(root, ctx) {
  root.append(h('h1', {}, 'Browse'));
  const libs = (await get('/libraries?limit=200')).items;
  if (!libs.length) {
    root.append(h('p', {}, 'No library yet. ', h('a', { href: '#/libraries' }, 'Add one'), '.'));
    return;
  }
  const libID = Number(ctx.params.get('library')) || libs[0].id;
  const seriesID = Number(ctx.params.get('series')) || 0;
  const select = h('select', { id: 'browse-library' },
    libs.map((l) => h('option', { value: l.id, selected: l.id === libID }, l.name)));
  select.addEventListener('change', () => ctx.navigate('browse', { library: select.value }, false));
  root.append(h('div', { class: 'field' }, h('label', { for: 'browse-library' }, 'Library'), select));

  const seriesNav = h('nav', { 'aria-label': 'Series' });
  const filesEl = h('section', { 'aria-labelledby': 'files-title', id: 'files' });
  const errorsEl = h('section', { 'aria-labelledby': 'errors-title', id: 'scan-errors' });
  root.append(h('div', { class: 'browse' }, seriesNav, filesEl), errorsEl);

  const cards = new Map(); // file id → card element
  await Promise.all([
    seriesList(seriesNav, libID, seriesID),
    fileGrid(filesEl, libID, seriesID, cards),
    scanErrors(errorsEl, libID, ctx),
  ]);

  ctx.on('thumbnail', async (t) => {
    const card = cards.get(t.file_id);
    if (!card || t.status !== 'ready' && t.status !== 'failed') return;
    try {
      const f = await get(`/files/${t.file_id}`);
      setCover(card.querySelector('.cover'), f, '');
    } catch { /* the card keeps its old cover */ }
  });
}

async function seriesList(nav, libID, current) {
  const ul = h('ul', { class: 'series-list' },
    h('li', {}, h('a', { href: `#/browse?library=${libID}`, 'aria-current': current ? null : 'true' }, 'All files')));
  nav.append(h('h2', { class: 'first' }, 'Series'), ul);
  const pager = new Pager('/series', { library_id: libID }, 200);
  const load = async () => {
    for (const s of await pager.next()) {
      ul.append(h('li', {}, h('a', { href: `#/browse?library=${libID}&series=${s.id}`, 'aria-current': s.id === current ? 'true' : null },
        s.name || '(no series)', ' ', h('span', { class: 'hint' }, `(${fmtNum(s.file_count)})`))));
    }
    return !pager.done;
  };
  const more = moreButton(load, 'More series');
  nav.append(more);
  more.hidden = !(await load());
}

async function fileGrid(el, libID, seriesID, cards) {
  let heading = 'All files';
  if (seriesID) {
    const s = await get(`/series/${seriesID}`);
    heading = s.name || '(no series)';
  }
  const grid = h('ul', { class: 'cards', id: 'file-grid' });
  const count = h('p', { class: 'hint', role: 'status' });
  el.append(h('h2', { id: 'files-title', class: 'first' }, heading), count, grid);
  const pager = seriesID
    ? new Pager(`/series/${seriesID}/files`, {}, PAGE)
    : new Pager('/files', { library_id: libID }, PAGE);
  let shown = 0;
  const load = async () => {
    const files = await pager.next();
    const frag = document.createDocumentFragment();
    for (const f of files) {
      const c = card(f);
      cards.set(f.id, c);
      frag.append(c);
    }
    grid.append(frag);
    shown += files.length;
    count.textContent = shown ? `${fmtNum(shown)} file${shown === 1 ? '' : 's'}${pager.done ? '' : ' so far'}` : 'No files (scan the library first).';
    return !pager.done;
  };
  const more = moreButton(load, 'Load more files');
  el.append(more);
  more.hidden = !(await load());
  // Keep loading as the reader reaches the end of the grid.
  const io = new IntersectionObserver((es) => {
    if (es.some((e) => e.isIntersecting) && !more.hidden) more.querySelector('button:not(:disabled)')?.click();
  }, { rootMargin: '600px' });
  io.observe(more);
}

function card(f) {
  const name = fileName(f.relative_path);
  const bits = [];
  // A video has no pages; its duration is in GET /files/{id} only.
  if (f.total_pages !== null && f.format !== 'video') bits.push(`${fmtNum(f.total_pages)} p`);
  if (f.format) bits.push(f.format.toUpperCase());
  bits.push(fmtBytes(f.size_bytes));
  return h('li', { class: 'card', dataset: { fileId: f.id } },
    cover(f, ''),
    h('div', { class: 'body' },
      h('span', { class: 'title' }, name),
      h('span', { class: 'meta' }, bits.join(' · ')),
      h('span', { class: 'badges' },
        f.is_missing ? badge('missing') : null,
        f.analysis_error ? h('span', { class: 'badge bad', title: f.analysis_error.message }, 'broken') : null,
        f.cover.status !== 'ready' ? badge('cover ' + f.cover.status, f.cover.status === 'failed' ? 'bad' : 'muted') : null),
      readable(f) ? h('a', { href: `#/read?file=${f.id}`, class: 'read', 'aria-label': `Read ${name}` }, 'Read') : null,
      h('button', { type: 'button', class: 'link', onclick: () => details(f.id), 'aria-label': `Details of ${name}` }, 'Details')));
}

// readable: a book with pages the reader can show.
const readable = (f) => f.format !== 'video' && !f.is_missing && f.total_pages > 0;

async function details(id) {
  const body = h('div', {}, h('p', { class: 'hint' }, 'Loading…'));
  showDialog('File details', body);
  try {
    const f = await get(`/files/${id}`);
    const m = f.metadata || {};
    const row = (k, v) => (v === null || v === undefined || v === '' ? null : [h('dt', {}, k), h('dd', {}, v)]);
    replace(body, h('dl', { class: 'kv' },
      row('Path', h('span', { class: 'mono' }, f.relative_path)),
      row('Series', f.series && f.series.name),
      row('Format', f.format), f.format === 'video' ? null : row('Pages', f.total_pages), row('Size', fmtBytes(f.size_bytes)),
      row('Modified', fmtTime(f.mtime)),
      row('Missing since', f.missing_since && fmtTime(f.missing_since)),
      row('Analysis error', f.analysis_error && `${f.analysis_error.code}: ${f.analysis_error.message}`),
      row('Hash', f.content_hash && h('span', { class: 'mono' }, `${f.hash_algorithm}:${f.content_hash}`)),
      row('Cover', f.cover.status),
      row('Title', m.title), row('Number', m.number), row('Volume', m.volume), row('Year', m.year),
      row('Publisher', m.publisher), row('Writer', m.writer), row('Penciller', m.penciller),
      row('Genre', m.genre), row('Language', m.language_iso), row('Summary', m.summary),
      row('Metadata source', m.source)),
    f.video ? videoFacts(f.video, row) : null,
    h('p', { class: 'msg', role: 'status', id: 'regen-msg' }),
    h('button', { type: 'button', class: 'secondary', onclick: () => regenerate(f.id) }, 'Render the cover again'));
  } catch (e) {
    replace(body, h('p', { class: 'error', role: 'alert' }, errorText(e)));
  }
}

// videoFacts is what ffprobe said of a video file (absent when it could
// not read it: the analysis error says why).
function videoFacts(v, row) {
  return h('section', { id: 'file-video', 'aria-labelledby': 'file-video-title' },
    h('h3', { id: 'file-video-title' }, 'Video'),
    h('dl', { class: 'kv' },
      row('Container', v.container), row('Duration', fmtDuration(v.duration_ms)),
      row('Resolution', fmtResolution(v)),
      row('Video codec', v.video_codec || 'none'), row('Audio codec', v.audio_codec || 'none')));
}

async function regenerate(id) {
  const msg = document.getElementById('regen-msg');
  try {
    const r = await api('POST', `/files/${id}/cover/regenerate`);
    msg.textContent = r.status === 202 ? 'A new cover was requested; it appears here when ready.' : `A render is already ${r.body.status}.`;
  } catch (e) {
    msg.textContent = errorText(e);
  }
}

async function scanErrors(el, libID, ctx) {
  el.append(h('h2', { id: 'errors-title' }, 'Errors of the last scan'));
  const scans = await get(`/scans?library_id=${libID}&limit=1`);
  const scan = scans.items[0];
  if (!scan) {
    el.append(h('p', { class: 'hint' }, 'This library was never scanned.'));
    return;
  }
  el.append(h('p', { class: 'hint' }, `Scan ${scan.id}: `, badge(scan.status), ' started ', fmtTime(scan.started_at)));
  const tbody = h('tbody', {});
  const none = h('p', { class: 'hint' }, 'No errors.');
  el.append(none, h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'File'), h('th', { scope: 'col' }, 'Error'), h('th', { scope: 'col' }, 'Message'))),
    tbody)));
  const add = (e, first) => {
    const tr = h('tr', {}, h('td', { class: 'mono' }, e.relative_path), h('td', {}, badge(e.error_code, 'bad')), h('td', {}, e.message));
    if (first) tbody.prepend(tr); else tbody.append(tr);
    none.hidden = true;
  };
  const pager = new Pager(`/scans/${scan.id}/errors`, {}, 50);
  const load = async () => { (await pager.next()).forEach((e) => add(e)); return !pager.done; };
  const more = moreButton(load, 'More errors');
  el.append(more);
  more.hidden = !(await load());
  ctx.on('scan_error', (e) => { if (e.library_id === libID) add(e, true); });
}
