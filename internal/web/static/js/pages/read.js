// The reader: one book, one or two pages per screen. Keys, click zones
// (outer thirds) and a slider move through the book; the next screens'
// pages are fetched ahead at the width the viewport needs; the reading
// direction follows ComicInfo's Manga=YesAndRightToLeft (the book's, else
// its series'); progress is saved, debounced, for the reader user whose
// API key is set here, and restored when the book is opened again.

import { get } from '../api.js';
import { debounce, errorText, fileName, h, replace } from '../ui.js';
import { keyStep, viewOf, views, zoneStep } from '../reader/layout.js';
import { loadProgress, pageURL, readerKey, saveProgress, setReaderKey } from '../reader/net.js';

export const title = 'Reader';
const AHEAD = 2; // screens fetched ahead

export async function render(root, ctx) {
  const id = Number(ctx.params.get('file'));
  if (!Number.isInteger(id) || id < 1) throw new Error('no book given: open one from Browse');
  const [file, list] = await Promise.all([get(`/files/${id}`), get(`/files/${id}/pages`)]);
  const rtl = await rightToLeft(file);
  const r = new Reader(root, file, list.items, rtl);
  await r.start();
  return () => r.stop();
}

// rightToLeft: the book's own ComicInfo Manga when it has one, else the
// series' (a book without ComicInfo in a manga series reads like its series).
async function rightToLeft(file) {
  const m = file.metadata;
  if (m && m.manga) return m.right_to_left;
  if (!file.series) return false;
  const s = await get(`/series/${file.series.id}`);
  return !!(s.details && s.details.right_to_left);
}

class Reader {
  constructor(root, file, pages, rtl) {
    Object.assign(this, { root, file, pages, rtl, spread: false, view: 0, urls: new Map() });
    this.vs = views(pages, false);
    this.save = debounce(() => this.saveNow(), 600);
    this.onKey = (ev) => this.key(ev);
  }

  async start() {
    this.build();
    document.addEventListener('keydown', this.onKey);
    await this.restore();
    this.show();
    this.stage.focus();
  }

  stop() {
    document.removeEventListener('keydown', this.onKey);
    for (const u of this.urls.values()) u.then(URL.revokeObjectURL, () => {});
  }

  build() {
    const name = fileName(this.file.relative_path);
    const btn = (label, text, fn) => h('button', { type: 'button', class: 'secondary', 'aria-label': label, onclick: fn }, text);
    this.stage = h('div', { id: 'reader-stage', class: 'reader-stage', tabindex: '0', 'aria-label': 'Page; click the left or right third to turn',
      dataset: { dir: this.rtl ? 'rtl' : 'ltr' }, onclick: (ev) => this.click(ev) });
    this.label = h('span', { id: 'reader-where', role: 'status', 'aria-live': 'polite' });
    this.slider = h('input', { id: 'reader-slider', type: 'range', min: '1', max: String(this.pages.length), 'aria-label': 'Go to page',
      oninput: () => this.goPage(Number(this.slider.value) - 1) });
    if (this.rtl) this.slider.setAttribute('dir', 'rtl');
    this.msg = h('p', { id: 'reader-msg', class: 'hint', role: 'status' });
    const spreadBox = h('input', { id: 'reader-spread', type: 'checkbox', onchange: () => this.setSpread(spreadBox.checked) });
    replace(this.root, h('section', { class: 'reader', 'aria-label': 'Reader: ' + name },
      h('div', { class: 'reader-bar' },
        h('a', { href: '#/browse', class: 'secondary' }, 'Back to Browse'),
        h('strong', {}, name), this.rtl ? h('span', { class: 'badge muted' }, 'right to left') : null,
        btn('Previous page', '‹', () => this.step(-1)), this.label, btn('Next page', '›', () => this.step(1)),
        h('label', {}, spreadBox, ' Two pages')),
      this.slider, this.stage, this.keyForm(), this.msg));
  }

  // keyForm lets the admin read as a reader user (whose progress is saved).
  keyForm() {
    const input = h('input', { id: 'reader-key', type: 'password', autocomplete: 'off', spellcheck: 'false', value: readerKey() });
    const form = h('form', { id: 'reader-key-form', class: 'reader-key' },
      h('label', { for: 'reader-key' }, 'Reader API key (progress is saved for its user)'), input,
      h('button', { type: 'submit', class: 'secondary' }, 'Read as this user'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      setReaderKey(input.value.trim());
      await this.restore();
      this.show();
    });
    return form;
  }

  async restore() {
    if (!readerKey()) {
      this.msg.textContent = 'Progress is not saved: the admin token has none. Enter a reader user\u2019s API key to keep your place.';
      return;
    }
    try {
      const p = await loadProgress(this.file.id);
      const page = p && p.page > 0 ? Math.min(p.page, this.pages.length) : 0;
      if (page) this.view = viewOf(this.vs, page - 1);
      this.msg.textContent = page ? `Restored page ${page}.` : 'Progress is saved as you read.';
      this.root.querySelector('.reader').dataset.restored = String(page);
    } catch (e) {
      this.msg.textContent = 'Progress could not load: ' + errorText(e);
    }
  }

  key(ev) {
    if (ev.target instanceof HTMLInputElement && ev.target.type !== 'range' && ev.target.type !== 'checkbox') return;
    const s = keyStep(ev, this.rtl);
    if (s === null) return;
    ev.preventDefault();
    this.step(s);
  }

  click(ev) {
    const box = this.stage.getBoundingClientRect();
    const s = zoneStep(ev.clientX - box.left, box.width, this.rtl);
    if (s !== null) this.step(s);
  }

  step(s) {
    const last = this.vs.length - 1;
    const to = s === 'first' ? 0 : s === 'last' ? last : Math.max(0, Math.min(last, this.view + s));
    if (to === this.view) return;
    this.view = to;
    this.show();
    this.save();
  }

  goPage(p) {
    this.view = viewOf(this.vs, p);
    this.show();
    this.save();
  }

  setSpread(on) {
    const first = this.vs[this.view][0];
    this.spread = on;
    this.vs = views(this.pages, on);
    this.view = viewOf(this.vs, first);
    this.show();
  }

  // width is the page width the screen needs, in device pixels.
  width() {
    const w = (this.stage.clientWidth || window.innerWidth) / (this.spread ? 2 : 1);
    return Math.max(64, Math.round(w * (window.devicePixelRatio || 1)));
  }

  url(i) {
    const key = i + '@' + this.width();
    if (!this.urls.has(key)) this.urls.set(key, pageURL(this.file.id, this.pages[i].number, this.width()));
    return this.urls.get(key);
  }

  show() {
    const v = this.vs[this.view];
    const nums = v.map((i) => this.pages[i].number);
    this.label.textContent = `Page ${nums.join('–')} of ${this.pages.length}`;
    this.slider.value = String(nums[0]);
    this.stage.dataset.pages = nums.join(',');
    this.stage.replaceChildren(...v.map((i) => this.figure(i)));
    this.prefetch();
  }

  figure(i) {
    const p = this.pages[i];
    const fig = h('figure', { class: 'reader-page', dataset: { page: p.number, state: 'loading' } });
    const img = h('img', { alt: `Page ${p.number}` });
    fig.append(img);
    this.url(i).then((u) => {
      img.addEventListener('load', () => { fig.dataset.state = 'ready'; }, { once: true });
      img.src = u;
    }, (e) => {
      fig.dataset.state = 'failed';
      fig.replaceChildren(h('p', { class: 'error', role: 'alert' }, `Page ${p.number} could not load: ${errorText(e)}`));
    });
    return fig;
  }

  prefetch() {
    for (let v = this.view + 1; v <= Math.min(this.vs.length - 1, this.view + AHEAD); v++) {
      for (const i of this.vs[v]) this.url(i).catch(() => {});
    }
  }

  async saveNow() {
    if (!readerKey()) return;
    const v = this.vs[this.view];
    const page = this.pages[v[v.length - 1]].number;
    try {
      await saveProgress(this.file.id, page, this.view === this.vs.length - 1);
      this.root.querySelector('.reader').dataset.saved = String(page);
    } catch (e) {
      this.msg.textContent = 'Progress could not be saved: ' + errorText(e);
    }
  }
}
