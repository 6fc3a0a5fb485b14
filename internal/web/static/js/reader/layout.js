// Page layout of the reader: which pages are shown together. Pure
// functions of the pages list (GET /files/{id}/pages) so they can be
// reasoned about apart from the DOM.

/**
 * views groups 0-based page indexes into what one screen shows. In single
 * mode every page is alone. In spread mode the first page (the cover) is
 * alone, then pages go in pairs; a wide page (a spread already drawn as
 * one image) is always alone, and a page whose partner would be wide is
 * alone too, so a scan's two halves never get split across screens.
 */
export function views(pages, spread) {
  const out = [];
  for (let i = 0; i < pages.length;) {
    const pair = spread && i > 0 && i + 1 < pages.length && !pages[i].wide && !pages[i + 1].wide;
    out.push(pair ? [i, i + 1] : [i]);
    i += pair ? 2 : 1;
  }
  return out;
}

/** viewOf is the index of the view that shows page index p. */
export function viewOf(vs, p) {
  const i = vs.findIndex((v) => v.includes(p));
  return i < 0 ? 0 : i;
}

/**
 * keyStep maps a key to a step through the book: +1 forward, -1 back,
 * "first", "last", or null. The arrows follow the reading direction: in
 * a right-to-left book the left arrow goes forward.
 */
export function keyStep(ev, rtl) {
  switch (ev.key) {
    case 'ArrowRight': return rtl ? -1 : 1;
    case 'ArrowLeft': return rtl ? 1 : -1;
    case ' ': return ev.shiftKey ? -1 : 1;
    case 'PageDown': return 1;
    case 'PageUp': return -1;
    case 'Home': return 'first';
    case 'End': return 'last';
  }
  return null;
}

/** zoneStep maps a click at x in a stage of width w to a step (thirds). */
export function zoneStep(x, w, rtl) {
  if (x < w / 3) return rtl ? 1 : -1;
  if (x > (2 * w) / 3) return rtl ? -1 : 1;
  return null;
}
