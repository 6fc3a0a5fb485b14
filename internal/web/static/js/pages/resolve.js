// Resolve: a dry-run plan of which copy of every group stays, then the
// others moved into their library's trash by a delete job followed live,
// and the trash moved back on request. Nothing on disk changes before the
// user confirms, and workerd checks every copy again before it moves.

import { api, get } from '../api.js';
import { badge, confirmDialog, errorText, fmtBytes, fmtNum, h, replace } from '../ui.js';

const done = ['completed', 'failed', 'cancelled'];
const count = (n, one, many) => `${fmtNum(n)} ${n === 1 ? one : many}`;

export function resolvePanel() {
  const policy = h('select', { id: 'resolve-policy' },
    h('option', { value: 'oldest' }, 'the oldest copy'),
    h('option', { value: 'shortest_path' }, 'the copy with the shortest path'));
  const out = h('div', { id: 'resolve-plan' });
  const plan = h('button', { type: 'button', id: 'resolve-plan-btn' }, 'Plan');
  plan.onclick = async () => {
    replace(out, h('p', { class: 'hint' }, 'Planning…'));
    try {
      const { body } = await api('POST', '/duplicates/plans', { all: true, policy: policy.value });
      showPlan(out, body);
    } catch (e) {
      replace(out, h('p', { class: 'error' }, errorText(e)));
    }
  };
  return h('section', { class: 'resolve', 'aria-label': 'Resolve duplicates' },
    h('h2', {}, 'Resolve'),
    h('p', { class: 'hint' }, 'Keep one copy of every group and move the others into their library’s trash (.bindery-trash). ' +
      'Planning changes nothing; a library must allow deletion (its settings) before a plan runs on it.'),
    h('p', {}, h('label', { for: 'resolve-policy' }, 'Keep '), policy, ' ', plan), out, trashList());
}

// trashList lists the plans that moved copies to the trash, newest last,
// each with a way to move them back.
function trashList() {
  const list = h('ul', { id: 'trash-list', class: 'plan-group' });
  const el = h('details', {}, h('summary', {}, 'Trash'), list);
  el.addEventListener('toggle', async () => {
    if (!el.open) return;
    try {
      const page = await get('/duplicates/plans?limit=200');
      const trashed = page.items.filter((p) => p.action === 'trash' && p.job_id);
      replace(list, ...(trashed.length ? trashed.map(trashEntry)
        : [h('li', { class: 'hint' }, 'Nothing was moved to the trash yet.')]));
    } catch (e) {
      replace(list, h('li', { class: 'error' }, errorText(e)));
    }
  });
  return el;
}

function showPlan(out, plan) {
  if (!plan.remove_count) {
    replace(out, h('p', { class: 'hint' }, 'Nothing to remove: every group’s other copies are parts of books.'));
    return;
  }
  const status = h('p', { id: 'resolve-status', role: 'status' });
  const exec = h('button', { type: 'button', id: 'resolve-execute', class: 'danger' },
    `Move ${count(plan.remove_count, 'copy', 'copies')} to the trash`);
  const table = h('div', { id: 'resolve-groups' }, ...plan.groups.map(planGroup));
  exec.onclick = async () => {
    const ok = await confirmDialog(`Move ${count(plan.remove_count, 'copy', 'copies')} (${fmtBytes(plan.bytes_freed)}) to the trash?`, 'Move to trash');
    if (!ok) return;
    try {
      const { body: job } = await api('POST', `/duplicates/plans/${plan.id}/execute`);
      exec.disabled = true;
      await follow(job.id, status);
      const after = await get(`/duplicates/plans/${plan.id}`);
      replace(table, ...after.groups.map(planGroup));
      const again = restoreButton(job.id, status);
      again.id = 'resolve-restore';
      status.append(' ', again);
    } catch (e) {
      replace(status, h('span', { class: 'error' }, errorText(e)));
    }
  };
  replace(out, h('p', { id: 'resolve-summary' },
    `${count(plan.group_count, 'group', 'groups')} · ${count(plan.remove_count, 'copy', 'copies')} to remove · ${fmtBytes(plan.bytes_freed)} freed`),
    table, exec, status);
}

// planGroup lists a group's keeper first, highlighted, then its copies
// with what became of each once the job ran.
function planGroup(g) {
  const row = (f, what) => h('li', { class: what === 'keep' ? 'keep' : 'remove', dataset: { fileId: f.file_id } },
    badge(what, what === 'keep' ? 'ok' : what === 'trashed' ? 'muted' : 'warn'), ' ',
    h('span', { class: 'mono' }, f.relative_path), f.message ? h('span', { class: 'hint' }, ' ' + f.message) : '');
  return h('ul', { class: 'plan-group' }, row(g.keep, 'keep'), ...g.remove.map((f) => row(f, f.outcome || 'remove')));
}

// trashEntry is one resolution: its job, a restore button, and the files
// it moved (loaded when opened) with where each one went.
function trashEntry(p) {
  const status = h('span', { role: 'status' });
  const files = h('ul', { class: 'trash-files' });
  const more = h('details', {}, h('summary', {}, count(p.remove_count, 'file', 'files')), files);
  more.addEventListener('toggle', async () => {
    if (!more.open || files.childElementCount) return;
    try {
      const plan = await get(`/duplicates/plans/${p.id}`);
      const moved = plan.groups.flatMap((g) => g.remove);
      files.append(...moved.map((f) => h('li', { dataset: { fileId: f.file_id } }, badge(f.later || f.outcome || 'planned'), ' ',
        h('span', { class: 'mono' }, f.relative_path), f.trash_path && !f.later ? h('span', { class: 'hint' }, ' → ' + f.trash_path) : '')));
    } catch (e) {
      files.append(h('li', { class: 'error' }, errorText(e)));
    }
  });
  return h('li', { dataset: { jobId: p.job_id } },
    `Job ${p.job_id} (${fmtBytes(p.bytes_freed)}) `, restoreButton(p.job_id, status), ' ', status, more);
}

// follow polls a job until it ends, showing its progress.
async function follow(jobID, status) {
  for (;;) {
    const job = await get(`/jobs/${jobID}`);
    replace(status, badge(job.status), ` ${fmtNum(job.processed_items)} of ${count(job.total_items, 'file', 'files')}`);
    status.dataset.status = job.status;
    if (done.includes(job.status)) return job;
    await new Promise((r) => setTimeout(r, 400));
  }
}

function restoreButton(jobID, status) {
  const b = h('button', { type: 'button', class: 'secondary restore' }, 'Restore from the trash');
  b.onclick = async () => {
    b.disabled = true;
    try {
      const { body: job } = await api('POST', `/trash/${jobID}/restore`);
      const end = await follow(job.id, status);
      status.append(` · ${end.status === 'completed' ? 'restored' : 'restore ' + end.status}`);
    } catch (e) {
      replace(status, h('span', { class: 'error' }, errorText(e)));
    }
  };
  return b;
}
