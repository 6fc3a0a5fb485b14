// Overview: what is running now. Loaded once, then kept current by the
// event stream (job and thumbnail events); lists that have no events of
// their own (workers, queue, checkpoint) are reloaded when a job event says
// something changed, never on a timer.

import { ApiError, api, get } from '../api.js';
import { badge, debounce, errorText, fmtBytes, fmtNum, fmtTime, h, progressBar, replace, toast } from '../ui.js';

export const title = 'Overview';

const terminal = new Set(['completed', 'failed', 'cancelled']);

export async function render(root, ctx) {
  const jobsEl = h('div', { id: 'active-jobs' });
  const queueEl = h('div', { id: 'queue' });
  const workersEl = h('div', { id: 'workers' });
  const thumbsEl = h('div', { id: 'thumb-metrics' });
  const walEl = h('div', { id: 'wal-latest' });
  root.append(
    h('h1', {}, 'Overview'),
    h('section', { class: 'panel', 'aria-labelledby': 'h-active' }, h('h2', { id: 'h-active' }, 'Active jobs'), jobsEl),
    h('div', { class: 'grid2' },
      h('section', { class: 'panel', 'aria-labelledby': 'h-workers' }, h('h2', { id: 'h-workers' }, 'Workers'), workersEl),
      h('section', { class: 'panel', 'aria-labelledby': 'h-queue' }, h('h2', { id: 'h-queue' }, 'Queue'), queueEl),
      h('section', { class: 'panel', 'aria-labelledby': 'h-thumbs' }, h('h2', { id: 'h-thumbs' }, 'Covers'), thumbsEl),
      h('section', { class: 'panel', 'aria-labelledby': 'h-wal' }, h('h2', { id: 'h-wal' }, 'Last WAL checkpoint'), walEl)));

  const jobs = new Map(); // id → job view (or event payload)
  let hashStatus = null; // GET /duplicates/groups status, while a hash job is shown
  let scansQueued = 0;

  const drawJobs = () => {
    const list = [...jobs.values()].sort((a, b) => b.id - a.id);
    if (!list.length) return replace(jobsEl, h('p', { class: 'hint' }, 'Nothing is running.'));
    replace(jobsEl, list.map((j) => h('article', { class: 'job', dataset: { jobId: j.id, status: j.status } },
      h('div', { class: 'row' },
        h('strong', {}, `${j.kind} #${j.id}`),
        j.library_id ? h('a', { href: `#/browse?library=${j.library_id}` }, `library ${j.library_id}`) : 'all libraries',
        badge(j.status), j.cancel_requested ? badge('cancel requested', 'warn') : null,
        h('a', { href: `#/jobs?id=${j.id}` }, 'details')),
      progressBar(j),
      j.kind === 'hash' && !terminal.has(j.status) ? hashPhase(hashStatus, scansQueued) : null)));
  };

  const loadHashStatus = async () => {
    if (![...jobs.values()].some((j) => j.kind === 'hash' && !terminal.has(j.status))) return;
    hashStatus = (await get('/duplicates/groups?limit=1')).status;
    drawJobs();
  };

  const loadJobs = async () => {
    const [running, pending] = await Promise.all([
      get('/jobs?status=running&limit=20'), get('/jobs?status=pending&limit=20')]);
    for (const j of [...running.items, ...pending.items]) jobs.set(j.id, j);
    drawJobs();
  };

  const loadQueue = async () => {
    const q = await get('/queue');
    scansQueued = q.items.filter((e) => e.kind === 'scan').length;
    if (!q.items.length) return replace(queueEl, h('p', { class: 'hint' }, 'The queue is empty.'));
    replace(queueEl, h('ol', {}, q.items.map((e) => h('li', { dataset: { queueId: e.id } },
      `${e.kind} `, e.library_id ? `library ${e.library_id}` : 'all libraries', ` · ${e.priority} · ${e.reason} · `,
      fmtTime(e.created_at), ' ',
      h('button', { type: 'button', class: 'link', 'aria-label': `Remove queued ${e.kind} ${e.id}`, onclick: () => unqueue(e.id) }, 'Remove')))));
  };

  const unqueue = async (id) => {
    try {
      await api('DELETE', `/queue/${id}`);
      toast('Removed from the queue.');
    } catch (e) {
      toast(errorText(e));
    }
    await guard(loadQueue, queueEl)();
  };

  const loadWorkers = async () => {
    const w = await get('/workers');
    if (!w.items.length) return replace(workersEl, h('p', { class: 'hint' }, 'No worker has registered yet. Start workerd.'));
    replace(workersEl, h('ul', {}, w.items.map((x) => h('li', { dataset: { live: x.live } },
      badge(x.live ? 'live' : (x.stopped_at ? 'stopped' : 'silent')), ' ',
      h('span', { class: 'mono' }, x.worker_id), ` · ${x.host} · pid ${x.pid} · ${x.version} · seen `, fmtTime(x.last_seen_at)))));
  };

  const loadThumbs = async () => {
    const m = await get('/thumbnails/metrics');
    const stat = (label, v) => h('div', {}, h('dt', {}, label), h('dd', {}, fmtNum(v)));
    replace(thumbsEl, h('dl', { class: 'stats' },
      stat('Ready', m.ready), stat('Pending', m.pending), stat('Running', m.running), stat('Failed', m.failed),
      stat('Retry backlog', m.retry_backlog), stat('Cleanup pending', m.cleanup_pending),
      stat('Cleanup overdue', m.cleanup_overdue)),
    m.max_cleanup_lag_seconds > 0 ? h('p', { class: 'hint' }, `Oldest overdue cleanup: ${Math.round(m.max_cleanup_lag_seconds)} s late`) : null,
    m.crashed && m.crashed.length ? h('div', { class: 'crashed' },
      h('p', { class: 'error' }, 'Covers that crashed workerd (render_crashed; use Regenerate on the file to try again):'),
      h('ul', {}, m.crashed.map((c) => h('li', {},
        h('span', { class: 'mono' }, c.relative_path || `file ${c.file_id}`), ' · ', fmtTime(c.finished_at))))) : null);
  };

  const loadWAL = async () => {
    try {
      const w = await get('/maintenance/wal-checkpoint/latest');
      replace(walEl, h('dl', { class: 'kv' },
        h('dt', {}, 'Status'), h('dd', {}, badge(w.status)),
        h('dt', {}, 'Mode'), h('dd', {}, w.mode),
        h('dt', {}, 'Requested'), h('dd', {}, fmtTime(w.created_at)),
        h('dt', {}, 'Finished'), h('dd', {}, fmtTime(w.finished_at)),
        h('dt', {}, 'Frames'), h('dd', {}, w.checkpointed_frames === null ? '–' : `${fmtNum(w.checkpointed_frames)} of ${fmtNum(w.checkpoint_log_frames)}`)));
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404) throw e;
      replace(walEl, h('p', { class: 'hint' }, 'No checkpoint was requested yet.'));
    }
  };

  const guard = (fn, el) => async () => {
    try { await fn(); } catch (e) { if (ctx.current()) replace(el, h('p', { class: 'error', role: 'alert' }, errorText(e))); }
  };
  const refreshSide = debounce(() => {
    guard(loadQueue, queueEl)(); guard(loadWorkers, workersEl)(); guard(loadWAL, walEl)();
    guard(loadHashStatus, jobsEl)();
  }, 400);
  const refreshHash = debounce(() => { guard(loadQueue, queueEl)(); guard(loadHashStatus, jobsEl)(); }, 2000);
  const refreshThumbs = debounce(guard(loadThumbs, thumbsEl), 500);

  ctx.on('job', (j) => {
    const had = jobs.get(j.id);
    jobs.set(j.id, { ...had, ...j });
    // A finished job stays visible (at 100% when it completed) until the
    // next visit, so the end of a scan can be seen.
    drawJobs();
    if (!had || terminal.has(j.status)) refreshSide();
    else if (j.kind === 'hash') refreshHash();
  });
  ctx.on('thumbnail', refreshThumbs);
  ctx.on('reconnected', () => { guard(loadJobs, jobsEl)(); refreshSide(); refreshThumbs(); });

  await Promise.all([guard(loadJobs, jobsEl)(), guard(loadQueue, queueEl)(), guard(loadWorkers, workersEl)(),
    guard(loadThumbs, thumbsEl)(), guard(loadWAL, walEl)()]);
  await guard(loadHashStatus, jobsEl)();
}

// hashPhase says which pass a hash job is in: duplicates are looked for
// first, then the remaining files are hashed for move detection; a queued
// scan makes the job yield its slot within seconds.
function hashPhase(st, scansQueued) {
  const parts = [];
  if (st) {
    parts.push(st.candidates_pending > 0
      ? h('span', { class: 'phase', dataset: { phase: 'candidates' } },
        `Looking for duplicates: ${fmtNum(st.candidates_pending)} candidate${st.candidates_pending === 1 ? '' : 's'} left (${fmtBytes(st.candidate_bytes)})`)
      : h('span', { class: 'phase', dataset: { phase: 'backfill' } },
        `Duplicate groups complete; hashing the rest: ${fmtNum(st.backfill_pending)} file${st.backfill_pending === 1 ? '' : 's'} left (${fmtBytes(st.backfill_bytes)})`));
  }
  if (scansQueued > 0) parts.push(' ', badge('scan waiting: this hash yields to it', 'warn'));
  return parts.length ? h('p', { class: 'hint hash-phase' }, ...parts) : null;
}
