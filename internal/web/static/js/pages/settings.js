// Settings: every key with its value, default and description. Save sends
// only the changed keys in one PATCH, which the server applies all or
// nothing; a refused value is shown at its key and nothing is saved.

import { api, get } from '../api.js';
import { errorText, h, replace, toast } from '../ui.js';

export const title = 'Settings';

export async function render(root) {
  const list = (await get('/settings')).items;
  const status = h('p', { class: 'msg', role: 'status', id: 'settings-status' });
  const general = h('p', { class: 'error', role: 'alert' });
  const body = h('div', {});
  const save = h('button', { type: 'submit' }, 'Save settings');
  const form = h('form', { id: 'settings', class: 'settings', novalidate: true }, body,
    h('div', { class: 'savebar' }, save, h('button', { type: 'reset', class: 'secondary' }, 'Undo changes'), status, general));
  root.append(h('h1', {}, 'Settings'),
    h('p', { class: 'hint' }, 'Changes apply to new jobs; workers read them when they claim work.'), form);

  let inputs = new Map(); // key → {input, err, saved}
  const draw = (items) => {
    inputs = new Map();
    replace(body, items.map((s) => {
      const id = 'set-' + s.key.replaceAll('.', '-');
      const err = h('p', { class: 'error', id: id + '-error', role: 'alert' });
      const desc = h('p', { class: 'hint', id: id + '-desc' }, s.description);
      const input = control(s, id);
      input.setAttribute('aria-describedby', `${id}-desc ${id}-default ${id}-error`);
      inputs.set(s.key, { input, err, saved: s.value });
      return h('div', { class: 'setting', dataset: { key: s.key } },
        h('label', { for: id, class: 'mono' }, s.key),
        h('div', {},
          h('div', { class: 'controls' }, input,
            h('button', { type: 'button', class: 'link', onclick: () => { input.value = s.default; }, 'aria-label': `Reset ${s.key} to its default` }, 'Use default')),
          desc,
          h('p', { class: 'hint', id: id + '-default' }, `Default: ${s.default}` + (s.kind === 'int' ? ` · range ${s.min}–${s.max}` : '')),
          err));
    }));
  };
  draw(list);

  form.addEventListener('reset', (ev) => {
    ev.preventDefault();
    for (const { input, err, saved } of inputs.values()) { input.value = saved; err.textContent = ''; input.removeAttribute('aria-invalid'); }
    status.textContent = '';
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.textContent = '';
    general.textContent = '';
    const changed = {};
    for (const [key, { input, err, saved }] of inputs) {
      err.textContent = '';
      input.removeAttribute('aria-invalid');
      if (input.value !== saved) changed[key] = input.value;
    }
    if (!Object.keys(changed).length) { status.textContent = 'Nothing changed.'; return; }
    save.disabled = true;
    try {
      const r = await api('PATCH', '/settings', changed);
      draw(r.body.items);
      status.textContent = `Saved ${Object.keys(changed).length} setting(s).`;
      toast('Settings saved.');
    } catch (e) {
      const f = inputs.get(e.details && e.details.key);
      if (f) {
        f.err.textContent = errorText(e);
        f.input.setAttribute('aria-invalid', 'true');
        f.input.focus();
        general.textContent = 'Nothing was saved: fix the value marked above.';
      } else {
        general.textContent = 'Nothing was saved: ' + errorText(e);
      }
    } finally {
      save.disabled = false;
    }
  });
}

// control is the input of one setting: a select for enums, a number for
// ints (bounds shown, checked by the server), text for lists.
function control(s, id) {
  if (s.kind === 'enum' && s.enum) {
    return h('select', { id, name: s.key }, s.enum.map((v) => h('option', { value: v, selected: v === s.value }, v)));
  }
  if (s.kind === 'int') {
    return h('input', { id, name: s.key, type: 'text', inputmode: 'numeric', value: s.value, size: 12, autocomplete: 'off' });
  }
  return h('input', { id, name: s.key, type: 'text', value: s.value, size: 40, autocomplete: 'off', spellcheck: 'false' });
}
