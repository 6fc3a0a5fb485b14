// Same book: the books that are one book in other containers (GET
// /duplicates/books: same pages, one book containing another with credit
// pages, or one page index not read yet), the common pages left out when
// books are compared (/duplicates/pages), and the pairs of books whose
// covers look alike (/duplicates/covers). A report: nothing here deletes.
// Pages are fetched with the admin token as the reader fetches them
// (pageURL); covers come by their signed URLs.

import { Pager, get } from '../api.js';
import { badge, cover, errorText, fileName, fmtBytes, fmtNum, h, moreButton, replace } from '../ui.js';
import { pageURL } from '../reader/net.js';

export const title = 'Same book';

const kinds = {
  same_pages: ['same pages', 'ok', 'Every page is the same; only the container, compression or page order differs.'],
  contains: ['contains', 'warn', 'One book holds another’s pages plus a few at the start or the end (credit pages); they are shown side by side.'],
  same_pages_by_index: ['same page index', 'muted', 'The archives’ indexes list the same pages; not every book’s pages are read yet.'],
};

const THUMB = 160; // width of a page shown side by side

export async function render(root) {
  root.append(h('h1', {}, 'Same book'),
    h('p', { class: 'hint' }, 'Books that are the same book in another container, the pages many series share, and covers that look alike. Byte-identical copies are under Duplicates. This is a report: nothing here deletes a file.'));
  await Promise.all([
    section(root, 'sb-groups', 'Same pages in other containers', 'group', '/duplicates/books', 20, group,
      'No book has its pages in another container (books are compared once they are hashed).'),
    section(root, 'sb-common', 'Common pages', 'common page', '/duplicates/pages', 12, commonPage,
      'No page is common to enough series (samebook.common_pages_min_series).'),
    section(root, 'sb-covers', 'Similar covers', 'pair', '/duplicates/covers', 20, coverPair,
      'No two books outside a group have covers within samebook.cover_distance bits.'),
  ]);
}

// section lists one report in keyset pages, with a count and a "Load more".
async function section(root, id, heading, noun, path, limit, item, empty) {
  const list = h('div', { class: 'sb-list' });
  const count = h('p', { class: 'hint', role: 'status' });
  const el = h('section', { id, 'aria-label': heading }, h('h2', {}, heading), count, list);
  root.append(el);
  const pager = new Pager(path, {}, limit);
  let n = 0;
  const load = async () => {
    for (const it of await pager.next()) {
      list.append(item(it));
      n++;
    }
    el.dataset.count = n;
    count.textContent = n ? `${fmtNum(n)} ${noun}${n === 1 ? '' : 's'}${pager.done ? '' : ' so far'}` : empty;
    return !pager.done;
  };
  const more = moreButton(load, 'Load more');
  el.append(more);
  try {
    more.hidden = !(await load());
  } catch (e) {
    more.hidden = true;
    replace(count, h('span', { class: 'error', role: 'alert' }, errorText(e)));
  }
}

function group(g) {
  const [label, cls, hint] = kinds[g.kind] || [g.kind, 'muted', ''];
  const cards = h('ul', { class: 'cards' });
  for (const b of g.books) cards.append(bookCard(b));
  const el = h('section', { class: 'sb-group', dataset: { kind: g.kind, key: g.key }, 'aria-label': `${label}: ${g.books.length} books` },
    h('h3', {}, badge(label, cls), ` ${g.books.length} books · ${fmtBytes(g.books.reduce((s, b) => s + b.size_bytes, 0))}`),
    h('p', { class: 'hint' }, hint), cards);
  if (g.kind === 'contains') el.append(differingPages(g.books));
  return el;
}

function bookCard(b) {
  const box = h('figure', { class: 'cover' }, h('span', { class: 'nocover' }, '…'));
  const extra = b.extra_pages_start || b.extra_pages_end
    ? ` · +${b.extra_pages_start} at the start, +${b.extra_pages_end} at the end` : '';
  const li = h('li', { class: 'card', dataset: { fileId: b.id } }, box,
    h('div', { class: 'body' },
      h('span', { class: 'title' }, fileName(b.relative_path)),
      h('span', { class: 'meta mono' }, b.relative_path),
      h('span', { class: 'meta sb-facts' }, `${b.format || '?'} · ${fmtBytes(b.size_bytes)} · ${b.total_pages ?? '?'} pages${extra}`)));
  get(`/files/${b.id}`).then((full) => box.replaceWith(cover(full, ''))).catch(() => { box.querySelector('.nocover').textContent = 'no cover'; });
  return li;
}

// differingPages shows, for each book of a contains group with extra
// pages, those pages side by side (the pages the other books lack).
function differingPages(books) {
  const row = h('div', { class: 'sb-pages', 'aria-label': 'Pages that differ' });
  for (const b of books) {
    const total = b.total_pages || 0;
    const nums = [];
    for (let i = 1; i <= b.extra_pages_start; i++) nums.push(i);
    for (let i = total - b.extra_pages_end + 1; i <= total; i++) if (i > b.extra_pages_start) nums.push(i);
    for (const n of nums) row.append(pageFigure(b.id, n, `${fileName(b.relative_path)}, page ${n}`));
  }
  return row;
}

function pageFigure(fileID, n, caption) {
  const img = h('img', { alt: caption, width: THUMB });
  const fig = h('figure', { class: 'sb-page', dataset: { fileId: fileID, page: n } }, img, h('figcaption', { class: 'meta' }, caption));
  pageURL(fileID, n, THUMB).then((u) => {
    img.src = u;
    fig.dataset.state = 'ready';
  }).catch((e) => {
    fig.dataset.state = 'failed';
    img.replaceWith(h('span', { class: 'error', role: 'alert' }, `Page ${n} could not load: ${errorText(e)}`));
  });
  return fig;
}

function commonPage(p) {
  const el = h('div', { class: 'sb-common', dataset: { digest: p.digest } },
    pageFigure(p.example_file_id, p.example_page, `page ${p.example_page} of book ${p.example_file_id}`),
    h('p', { class: 'meta' }, `in ${fmtNum(p.books)} books of ${fmtNum(p.series)} series · `, h('span', { class: 'mono' }, p.digest.slice(0, 16) + '…')));
  return el;
}

function coverPair(p) {
  const [a, b] = p.books;
  const side = (x) => h('li', { class: 'card', dataset: { fileId: x.id } },
    cover({ id: x.id, cover: { status: 'ready', url: x.cover_url } }, fileName(x.relative_path)),
    h('div', { class: 'body' },
      h('span', { class: 'title' }, fileName(x.relative_path)),
      h('span', { class: 'meta mono' }, x.relative_path),
      h('span', { class: 'meta' }, `${x.format || '?'} · ${fmtBytes(x.size_bytes)} · `, h('span', { class: 'mono' }, x.cover_hash))));
  return h('section', { class: 'sb-pair', dataset: { distance: p.distance, files: `${a.id},${b.id}` }, 'aria-label': `Covers ${p.distance} bits apart` },
    h('h3', {}, badge(`${p.distance} bit${p.distance === 1 ? '' : 's'} apart`, p.distance <= 2 ? 'ok' : 'warn'), ' probably the same issue, another scan'),
    h('ul', { class: 'cards' }, side(a), side(b)));
}
