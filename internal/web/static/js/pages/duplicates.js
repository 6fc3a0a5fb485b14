// Duplicates: groups of files with the same content hash, in the API's
// order (most copies, then most bytes; keyset pages), each with its wasted
// bytes and its files side by side with their covers.

import { Pager, get } from '../api.js';
import { badge, cover, errorText, fileName, fmtBytes, fmtNum, h, moreButton, replace } from '../ui.js';
import { resolvePanel } from './resolve.js';

export const title = 'Duplicates';

export async function render(root) {
  const list = h('div', { id: 'dup-groups' });
  const total = h('p', { class: 'hint', role: 'status' });
  const search = h('p', { id: 'dup-search', class: 'hint' });
  root.append(h('h1', {}, 'Duplicates'), search,
    h('p', { class: 'hint' }, 'Files whose content hash is equal. Wasted bytes is what keeping one copy of each group would free.'),
    total, resolvePanel(), list);
  const pager = new Pager('/duplicates/groups', {}, 20);
  let groups = 0;
  let wasted = 0;
  const load = async () => {
    const items = await pager.next();
    if (pager.status) showSearch(search, pager.status);
    for (const g of items) {
      list.append(group(g));
      groups++;
      wasted += g.wasted_bytes;
    }
    total.textContent = groups
      ? `${fmtNum(groups)} group${groups === 1 ? '' : 's'}${pager.done ? '' : ' so far'}, ${fmtBytes(wasted)} wasted.`
      : 'No duplicates found (files are grouped once they are hashed: press “Hash now” on a library).';
    return !pager.done;
  };
  const more = moreButton(load, 'Load more groups');
  root.append(more);
  more.hidden = !(await load());
}

// showSearch says whether the groups are final: they are once no file that
// shares its size with another is left to hash.
function showSearch(el, st) {
  const unread = st.unreadable > 0 ? ` ${fmtNum(st.unreadable)} unreadable file${st.unreadable === 1 ? '' : 's'} wait for a retry.` : '';
  el.dataset.complete = st.complete;
  replace(el, st.complete
    ? [badge('complete', 'ok'), ` Every possible duplicate has been hashed.${unread}`]
    : [badge('still looking', 'warn'), ` ${fmtNum(st.candidates_pending)} candidate${st.candidates_pending === 1 ? '' : 's'} left (${fmtBytes(st.candidate_bytes)} to read).${unread}`]);
}

function group(g) {
  const cards = h('ul', { class: 'cards' });
  const el = h('section', { class: 'dup-group', dataset: { groupKey: g.group_key }, 'aria-label': `Group of ${g.file_count} copies` },
    h('h2', { class: 'first' }, `${fmtNum(g.file_count)} copies · ${fmtBytes(g.wasted_bytes)} wasted`),
    h('p', { class: 'hint' }, `${fmtBytes(g.total_size_bytes)} in total · `, h('span', { class: 'mono' }, `${g.hash_algorithm}:${g.content_hash.slice(0, 16)}…`)),
    cards);
  const pager = new Pager(`/duplicates/groups/${g.group_key}/files`, {}, 50);
  const load = async () => {
    for (const f of await pager.next()) cards.append(fileCard(f));
    return !pager.done;
  };
  const more = moreButton(load, 'More copies');
  el.append(more);
  load().then((m) => { more.hidden = !m; }).catch((e) => { replace(cards, h('li', { class: 'error' }, errorText(e))); more.hidden = true; });
  return el;
}

// fileCard shows a copy at once and fills in its cover from GET /files/{id}
// (the group listing carries no cover URL).
function fileCard(f) {
  const box = h('figure', { class: 'cover' }, h('span', { class: 'nocover' }, '…'));
  const li = h('li', { class: 'card', dataset: { fileId: f.id } }, box,
    h('div', { class: 'body' },
      h('span', { class: 'title' }, fileName(f.relative_path)),
      h('span', { class: 'meta mono' }, f.relative_path),
      h('span', { class: 'meta' }, `library ${f.library_id} · ${fmtBytes(f.size_bytes)}`)));
  get(`/files/${f.id}`).then((full) => box.replaceWith(cover(full, ''))).catch(() => { box.querySelector('.nocover').textContent = 'no cover'; });
  return li;
}
