// The reader's requests. Pages come with the admin token (the dashboard
// sees every library); progress belongs to a reader user, so it is sent
// with that user's API key (X-API-Key) and never with the admin token,
// which has no progress (user_required).

import { ApiError, BASE, token } from '../api.js';

const KEY = 'bindery.readerKey';
export const readerKey = () => sessionStorage.getItem(KEY) || '';
export const setReaderKey = (k) => (k ? sessionStorage.setItem(KEY, k) : sessionStorage.removeItem(KEY));

async function send(path, init) {
  const res = await fetch(BASE + path, init);
  if (res.ok) return res;
  let err = {};
  try { err = (await res.json()).error || {}; } catch { /* not JSON */ }
  throw new ApiError(res.status, err.code, err.message || res.statusText, err.details);
}

/** pageURL fetches page n shrunk to width and returns an object URL. */
export async function pageURL(fileID, n, width) {
  const res = await send(`/files/${fileID}/pages/${n}?width=${width}`, { headers: { Authorization: 'Bearer ' + token() } });
  return URL.createObjectURL(await res.blob());
}

function progressInit(method, body) {
  const init = { method, headers: { 'X-API-Key': readerKey(), Accept: 'application/json' } };
  if (body) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  return init;
}

/** loadProgress is the reader user's progress in the book, null if none. */
export async function loadProgress(fileID) {
  try {
    return await (await send(`/me/progress/${fileID}`, progressInit('GET'))).json();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

/** saveProgress stores the page (1-based) the reader user is on. */
export async function saveProgress(fileID, page, completed) {
  return (await send(`/me/progress/${fileID}`, progressInit('PUT', { page, completed }))).json();
}
