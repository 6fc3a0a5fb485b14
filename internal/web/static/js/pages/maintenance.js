// Maintenance: request a WAL checkpoint, recover stale leases, schedule a
// thumbnail cleanup. Each answer is shown next to its form.

import { Pager, api } from '../api.js';
import { badge, errorText, fmtNum, fmtTime, h, moreButton, replace } from '../ui.js';

export const title = 'Maintenance';

export async function render(root, ctx) {
  const history = h('tbody', {});
  root.append(h('h1', {}, 'Maintenance'),
    h('div', { class: 'grid2' }, checkpointForm(() => reload()), recoverForm(), cleanupForm()),
    h('h2', {}, 'Recent WAL checkpoints'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'checkpoints' },
      h('thead', {}, h('tr', {}, ['ID', 'Mode', 'Status', 'Reason', 'Requested', 'Finished', 'Frames'].map((t) => h('th', { scope: 'col' }, t)))),
      history)));
  let pager;
  const load = async () => {
    for (const w of await pager.next()) {
      history.append(h('tr', {}, h('td', {}, String(w.id)), h('td', {}, w.mode), h('td', {}, badge(w.status)),
        h('td', {}, w.reason), h('td', {}, fmtTime(w.created_at)), h('td', {}, fmtTime(w.finished_at)),
        h('td', {}, w.checkpointed_frames === null ? '–' : `${fmtNum(w.checkpointed_frames)} / ${fmtNum(w.checkpoint_log_frames)}`)));
    }
    return !pager.done;
  };
  const more = moreButton(load);
  root.append(more);
  const reload = async () => {
    if (!ctx.current()) return;
    pager = new Pager('/maintenance/wal-checkpoint', {}, 10);
    history.replaceChildren();
    more.hidden = !(await load());
  };
  await reload();
}

function panel(id, title, intro, fields, label, send) {
  const out = h('div', { class: 'msg', role: 'status', id: id + '-result' });
  const submit = h('button', { type: 'submit' }, label);
  const form = h('form', { id, class: 'panel', novalidate: true },
    h('h2', { class: 'first' }, title), h('p', { class: 'hint' }, intro), fields, submit, out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    replace(out);
    try {
      replace(out, await send(new FormData(form)));
    } catch (e) {
      replace(out, h('p', { class: 'error', role: 'alert' }, errorText(e)));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function checkpointForm(done) {
  return panel('wal-form', 'WAL checkpoint',
    'Copies the write-ahead log into the database; truncate also shrinks the log file. A worker runs it.',
    [h('div', { class: 'field' }, h('label', { for: 'wal-mode' }, 'Mode'),
      h('select', { id: 'wal-mode', name: 'mode' }, ['passive', 'restart', 'truncate'].map((m) => h('option', { value: m }, m)))),
    h('div', { class: 'field' }, h('label', { for: 'wal-reason' }, 'Reason (optional)'), h('input', { id: 'wal-reason', name: 'reason', maxlength: 500 })),
    h('div', { class: 'field' }, h('label', {}, h('input', { type: 'checkbox', name: 'force', value: '1' }), ' Ignore the minimum interval'))],
    'Request checkpoint',
    async (fd) => {
      const body = { mode: fd.get('mode') };
      if (fd.get('reason')) body.reason = fd.get('reason');
      if (fd.get('force')) body.force = true;
      const r = await api('POST', '/maintenance/wal-checkpoint', body);
      done();
      return r.status === 202 ? `Checkpoint ${r.body.id} requested (${r.body.mode}).`
        : `Checkpoint ${r.body.id} is already ${r.body.status}; no new one was added.`;
    });
}

function recoverForm() {
  return panel('recover-form', 'Recover stale work',
    'Returns running jobs, covers, cleanups and checkpoints whose worker lease expired to the queue. controld also does this on its own.',
    [], 'Recover stale rows',
    async () => {
      const r = (await api('POST', '/maintenance/recover-stale')).body;
      return `Recovered ${fmtNum(r.total)}: ${fmtNum(r.jobs)} jobs, ${fmtNum(r.thumbnails)} covers, ${fmtNum(r.cleanup)} cleanups, ${fmtNum(r.wal)} checkpoints.`;
    });
}

function cleanupForm() {
  return panel('cleanup-form', 'Cover cache cleanup',
    'Deletes cached covers of a group: library:<id>, file:<id> or shards:<n> (after a shard count change).',
    [h('div', { class: 'field' }, h('label', { for: 'cleanup-key' }, 'Group'),
      h('input', { id: 'cleanup-key', name: 'group_key', class: 'mono', placeholder: 'library:1', autocomplete: 'off', spellcheck: 'false' })),
    h('div', { class: 'field' }, h('label', { for: 'cleanup-after' }, 'Not before (optional, local time)'),
      h('input', { id: 'cleanup-after', name: 'execute_after', type: 'datetime-local' }))],
    'Schedule cleanup',
    async (fd) => {
      const body = { group_key: fd.get('group_key') };
      if (fd.get('execute_after')) body.execute_after = new Date(fd.get('execute_after')).toISOString();
      const r = (await api('POST', '/maintenance/thumbnail-cleanup', body)).body;
      return [`Cleanup ${r.id} of ${r.group_key}: `, badge(r.status), ' after ', fmtTime(r.execute_after)];
    });
}
