// Vigil web UI: plain JavaScript over vigild's HTTP API (docs/openapi.yaml).
// JSON requests carry the token as "Authorization: Bearer"; media URLs (HLS playlists, whose
// segments inherit it, thumbnails, exports) carry it as ?access_token=, since a <video> or <img>
// cannot set headers. The token comes from the URL fragment (#token=...) or a prompt, and is kept
// in this tab's sessionStorage only. The page is four classic scripts sharing these globals,
// loaded in order by index.html: api.js (token, HTTP, formatting), timeline.js, player.js, app.js.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'vigil.token';

const state = {
  token: '',
  cameras: [],
  camera: null,      // selected camera name
  timeline: null,    // last /timeline answer of the selected camera
  events: [],        // events in the timeline's window
  win: { from: 0, to: 1 },  // timeline window, Unix ms
  hls: null,
  mode: 'stopped',   // stopped | recorded | live | trick (keyframe fast-forward/rewind) | paused (a trick play reached an end)
  playFromMs: 0,     // wall time of the playlist's start (fallback when hls.js has no date)
  posMs: 0,          // the last recording position shown (wall time, ms)
  trick: null,       // { dir: 1 | -1, rate, from, to }: the keyframe clip playing, its recorded range (ms)
  searchNext: null,
  range: null,       // { from, to } (ms) of the recording playing: what Export MP4 downloads
  selection: null,   // { from, to } (ms) dragged on the timeline: what Lock selection locks
  view: 'camera',    // camera | wall | locks | admin
  admin: false,      // the token may administer (GET /api/v1/tokens answered 200)
  groups: [],        // GET /api/v1/groups
  details: new Map(),  // camera name → GET /api/v1/cameras/{name} (streams, for the substream)
};

// ---------- token ----------

function readToken() {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  const fromHash = hash.get('token');
  if (fromHash) {
    sessionStorage.setItem(TOKEN_KEY, fromHash);
    hash.delete('token');
    const rest = hash.toString();
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  }
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

function askToken(message) {
  $('app').hidden = true;
  $('login').hidden = false;
  setStatus(message || 'A token is needed.');
  $('token-input').focus();
}

$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = $('token-input').value.trim();
  if (!t) return;
  sessionStorage.setItem(TOKEN_KEY, t);
  state.token = t;
  $('login').hidden = true;
  start();
});

$('logout').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = '';
  stopPlayer();
  askToken('Token forgotten.');
});

// ---------- HTTP ----------

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// BODY (optional) is sent as JSON with METHOD (default GET, or POST with a body).
async function api(path, method, body) {
  const init = { headers: { Authorization: 'Bearer ' + state.token }, cache: 'no-store', method: method || (body ? 'POST' : 'GET') };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 401) {
    askToken('The token was refused (401). Enter another one.');
    throw new ApiError(401, 'unauthorized');
  }
  const ctype = res.headers.get('content-type') || '';
  const answer = ctype.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new ApiError(res.status, (answer && answer.error) || res.statusText);
  return answer;
}

function mediaUrl(path, params = {}) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  u.searchParams.set('access_token', state.token);
  return u.pathname + u.search;
}

const at = (ms) => '@' + (ms / 1000).toFixed(3);  // the API's @UNIX_SECONDS time form
const camPath = (name) => '/api/v1/cameras/' + encodeURIComponent(name);

function setStatus(text, isError) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', !!isError);
}

function fmtTime(ms, withDate) {
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  const t = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withDate ? `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${t}` : t;
}

function fmtBytes(n) {
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i ? n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) : String(n)) + ' ' + units[i];
}

function fmtDuration(s) {
  if (s < 60) return s.toFixed(0) + ' s';
  if (s < 3600) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(2) + ' h';
}

