// Search: one box over GET /api/v1/search, books and series side by side.
// Each kind is its own keyset list (Pager over the API's cursor) with a
// "Load more"; a new query replaces both lists. Typing searches after a
// short pause (Enter searches at once); answers to a query the user has
// since changed are dropped (a sequence number), so a slow old answer
// never overwrites a newer one. The query is kept in the URL (#/search?q=)
// without a history entry per keystroke, so a reload shows the same
// results. A query the API refuses (400 invalid_query) is shown as the
// API's reason next to the box, not as a failure of the page.

import { ApiError, Pager } from '../api.js';
import { debounce, errorText, fileName, fmtNum, h, moreButton, replace } from '../ui.js';

export const title = 'Search';

const PAGE = 20;

export async function render(root, ctx) {
  const input = h('input', { id: 'search-q', type: 'search', name: 'q', autocomplete: 'off', spellcheck: 'false',
    value: ctx.params.get('q') || '', 'aria-describedby': 'search-msg' });
  const msg = h('p', { id: 'search-msg', class: 'hint', role: 'status' }, 'Words of a title, file name, series, writer or penciller; the last word may be cut short.');
  const form = h('form', { id: 'search-form', role: 'search', class: 'field' },
    h('label', { for: 'search-q' }, 'Search'), input, h('button', { type: 'submit' }, 'Search'));
  const results = h('div', { id: 'search-results', class: 'search-results' });
  root.append(h('h1', {}, 'Search'), form, msg, results);

  let seq = 0;
  let last = null; // the query shown
  const run = async (typed) => {
    const q = input.value.trim();
    // A pause in typing may come after the user left the page, or after
    // Enter already searched for the same words.
    if (!ctx.current() || (typed === true && q === last)) return;
    last = q;
    const mine = ++seq;
    ctx.navigate('search', { q });
    input.removeAttribute('aria-invalid');
    results.replaceChildren();
    delete results.dataset.state;
    if (!q) {
      msg.textContent = 'Type a word to search.';
      return;
    }
    msg.textContent = 'Searching…';
    const books = kindList('books', 'Books', q, book);
    const series = kindList('series', 'Series', q, seriesItem);
    try {
      const [nb, ns] = await Promise.all([books.first(), series.first()]);
      if (mine !== seq || !ctx.current()) return;
      results.append(books.el, series.el);
      msg.textContent = nb || ns ? `Results for “${q}”.` : `Nothing matches “${q}”.`;
      results.dataset.state = nb || ns ? 'results' : 'empty';
    } catch (e) {
      if (mine !== seq || !ctx.current()) return;
      const bad = e instanceof ApiError && e.code === 'invalid_query';
      if (bad) input.setAttribute('aria-invalid', 'true');
      replace(msg, h('span', { class: 'error', role: 'alert' },
        bad ? `This search cannot be run: ${e.message}.` : 'Search failed: ' + errorText(e)));
      results.dataset.state = bad ? 'invalid' : 'failed';
    }
  };
  const later = debounce(() => run(true), 300);
  input.addEventListener('input', later);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); run(); });
  if (input.value.trim()) await run();
  input.focus();
}

// kindList is one kind's section: first() loads the first page and says
// how many it holds; "Load more" follows the cursor until it ends.
function kindList(kind, heading, q, item) {
  const list = h('ul', { class: 'search-list' });
  const count = h('p', { class: 'hint' });
  const el = h('section', { id: 'search-' + kind, 'aria-label': heading }, h('h2', {}, heading), count, list);
  const pager = new Pager('/search', { q, kind }, PAGE);
  let n = 0;
  const load = async () => {
    for (const it of await pager.next()) {
      list.append(item(it));
      n++;
    }
    el.dataset.count = n;
    count.textContent = n ? `${fmtNum(n)} ${kind === 'books' ? 'book' : 'series'}${n === 1 || kind === 'series' ? '' : 's'}${pager.done ? '' : ' so far'}` : `No ${kind}.`;
    return !pager.done;
  };
  const more = moreButton(load, `More ${kind}`);
  el.append(more);
  return { el, first: async () => { more.hidden = !(await load()); return n; } };
}

// book links to the reader; the series name, when there is one, to the
// series in Browse.
function book(b) {
  const name = fileName(b.relative_path);
  return h('li', { dataset: { fileId: b.id } },
    h('a', { href: `#/read?file=${b.id}`, class: 'read', 'aria-label': `Read ${name}` }, name),
    b.series_id ? [' · ', h('a', { href: `#/browse?library=${b.library_id}&series=${b.series_id}`, class: 'hint' }, b.series_name || '(no series)')] : null,
    h('span', { class: 'hint' }, ` · ${b.relative_path}`, b.total_pages ? ` · ${fmtNum(b.total_pages)} p` : ''));
}

function seriesItem(s) {
  return h('li', { dataset: { seriesId: s.id } },
    h('a', { href: `#/browse?library=${s.library_id}&series=${s.id}`, class: 'series' }, s.name || '(no series)'),
    h('span', { class: 'hint' }, ` · ${fmtNum(s.file_count)} book${s.file_count === 1 ? '' : 's'}`));
}
