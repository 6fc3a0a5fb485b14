// Jobs: the job list newest first with filters (kept in the URL), cursor
// paging ("Load more"), a detail view and cancel. Rows update in place from
// job events; a new job that matches the filters appears on top.

import { Pager, api, get } from '../api.js';
import { badge, errorText, fmtTime, h, moreButton, progressBar, replace, toast } from '../ui.js';

export const title = 'Jobs';

const kinds = ['scan', 'hash', 'thumbnail', 'delete'];
const statuses = ['pending', 'running', 'completed', 'failed', 'cancelled', 'retryable'];

export async function render(root, ctx) {
  const p = ctx.params;
  const filters = { kind: p.get('kind') || '', status: p.get('status') || '', library_id: p.get('library_id') || '' };
  const libs = (await get('/libraries?limit=200')).items;
  const libName = new Map(libs.map((l) => [l.id, l.name]));

  const sel = (name, label, options) => {
    const s = h('select', { id: 'f-' + name, name },
      h('option', { value: '' }, 'any'),
      options.map(([v, t]) => h('option', { value: v, selected: String(v) === filters[name] }, t)));
    return h('div', { class: 'field' }, h('label', { for: 'f-' + name }, label), s);
  };
  const form = h('form', { id: 'job-filters', class: 'row panel', role: 'search', 'aria-label': 'Filter jobs' },
    sel('kind', 'Kind', kinds.map((k) => [k, k])),
    sel('status', 'Status', statuses.map((s) => [s, s])),
    sel('library_id', 'Library', libs.map((l) => [l.id, l.name])));
  form.addEventListener('change', () => {
    const f = Object.fromEntries(new FormData(form));
    ctx.navigate('jobs', f, false);
  });
  form.addEventListener('submit', (e) => e.preventDefault());

  const tbody = h('tbody', {});
  const detail = h('section', { id: 'job-detail', 'aria-live': 'polite' });
  root.append(h('h1', {}, 'Jobs'), form, detail,
    h('div', { class: 'table-wrap' }, h('table', { id: 'jobs' },
      h('thead', {}, h('tr', {}, ['ID', 'Kind', 'Status', 'Library', 'Progress', 'Created', 'Finished', ''].map((t) => h('th', { scope: 'col' }, t)))),
      tbody)));

  const rows = new Map();
  const data = new Map(); // id → last known job view
  const row = (j) => {
    data.set(j.id, j);
    const tr = h('tr', { dataset: { jobId: j.id, status: j.status } },
      h('td', {}, String(j.id)), h('td', {}, j.kind),
      h('td', {}, badge(j.status), j.cancel_requested ? [' ', badge('cancel requested', 'warn')] : null),
      h('td', {}, j.library_id ? libName.get(j.library_id) || `#${j.library_id}` : '–'),
      h('td', {}, progressBar(j)),
      h('td', {}, fmtTime(j.created_at)), h('td', {}, fmtTime(j.finished_at)),
      h('td', {}, h('button', { type: 'button', class: 'secondary', onclick: () => showDetail(j.id), 'aria-label': `Details of job ${j.id}` }, 'Details')));
    rows.get(j.id)?.replaceWith(tr);
    rows.set(j.id, tr);
    return tr;
  };

  async function showDetail(id) {
    replace(detail, h('p', { class: 'hint' }, 'Loading job…'));
    try {
      const j = await get(`/jobs/${id}`);
      const msg = h('p', { class: 'msg', role: 'status' });
      const active = (j.status === 'pending' || j.status === 'running') && !j.cancel_requested;
      const kv = Object.entries(j).map(([k, v]) => [h('dt', {}, k.replaceAll('_', ' ')),
        h('dd', {}, v !== null && typeof v === 'object' ? h('pre', {}, JSON.stringify(v, null, 2))
          : k.endsWith('_at') && v ? fmtTime(v) : v === null ? '–' : String(v))]);
      replace(detail, h('div', { class: 'panel' },
        h('h2', { class: 'first', id: 'job-detail-title', tabindex: '-1' }, `Job ${j.id}`),
        active ? h('button', { type: 'button', class: 'danger', onclick: () => cancel(j.id, msg) }, 'Cancel job') : null,
        msg, h('dl', { class: 'kv' }, kv),
        h('button', { type: 'button', class: 'link', onclick: () => replace(detail) }, 'Close details')));
      detail.querySelector('h2').focus();
      if (rows.has(j.id)) row(j);
    } catch (e) {
      replace(detail, h('p', { class: 'error', role: 'alert' }, errorText(e)));
    }
  }

  async function cancel(id, msg) {
    try {
      const r = await api('POST', `/jobs/${id}/cancel`);
      toast(r.body.status === 'cancelled' ? `Job ${id} cancelled.` : `Cancel of job ${id} requested.`);
      await showDetail(id);
    } catch (e) {
      msg.textContent = errorText(e);
    }
  }

  const params = Object.fromEntries(Object.entries(filters).filter(([, v]) => v));
  const pager = new Pager('/jobs', params, 25);
  const load = async () => {
    const jobs = await pager.next();
    tbody.append(...jobs.map(row));
    if (!rows.size) tbody.append(h('tr', { class: 'none' }, h('td', { colspan: 8, class: 'hint' }, 'No jobs match.')));
    return !pager.done;
  };
  const more = moreButton(load);
  root.append(more);
  more.hidden = !(await load());

  const matches = (j) => (!filters.kind || j.kind === filters.kind) && (!filters.status || j.status === filters.status)
    && (!filters.library_id || String(j.library_id) === filters.library_id);
  ctx.on('job', (ev) => {
    const tr = rows.get(ev.id);
    if (tr) {
      // Events carry the changing fields; the rest stays from the row's
      // job, fetched again only when it ends (finished_at, result).
      row({ ...data.get(ev.id), ...ev });
      if (['completed', 'failed', 'cancelled'].includes(ev.status)) get(`/jobs/${ev.id}`).then(row).catch(() => {});
    } else if (matches(ev)) {
      tbody.querySelector('tr.none')?.remove();
      get(`/jobs/${ev.id}`).then((j) => tbody.prepend(row(j))).catch(() => {});
    }
  });
  if (p.get('id')) await showDetail(Number(p.get('id')));
}
