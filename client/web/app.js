// Vigil web UI: plain JavaScript over vigild's HTTP API (docs/openapi.yaml).
// JSON requests carry the token as "Authorization: Bearer"; media URLs (HLS playlists, whose
// segments inherit it, thumbnails, exports) carry it as ?access_token=, since a <video> or <img>
// cannot set headers. The token comes from the URL fragment (#token=...) or a prompt, and is kept
// in this tab's sessionStorage only.
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

async function api(path) {
  const res = await fetch(path, { headers: { Authorization: 'Bearer ' + state.token }, cache: 'no-store' });
  if (res.status === 401) {
    askToken('The token was refused (401). Enter another one.');
    throw new ApiError(401, 'unauthorized');
  }
  const ctype = res.headers.get('content-type') || '';
  const body = ctype.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new ApiError(res.status, (body && body.error) || res.statusText);
  return body;
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

function fmtDuration(s) {
  if (s < 60) return s.toFixed(0) + ' s';
  if (s < 3600) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(2) + ' h';
}

// ---------- cameras ----------

async function loadCameras() {
  const body = await api('/api/v1/cameras');
  state.cameras = body.cameras || [];
  const ul = $('cameras');
  ul.replaceChildren();
  const qcam = $('q-camera');
  const keep = qcam.value;
  qcam.replaceChildren(new Option('all', ''));
  for (const c of state.cameras) {
    const li = document.createElement('li');
    li.dataset.camera = c.name;
    li.classList.toggle('selected', c.name === state.camera);
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = c.name;
    name.title = c.pulled ? 'pulled by vigild' : 'pushed by a recording client';
    const st = document.createElement('span');
    st.className = 'state ' + String(c.state).replace(/\s+/g, '-');
    st.textContent = c.state;
    li.append(name, st);
    if (c.state === 'recording') {
      const live = document.createElement('button');
      live.type = 'button';
      live.textContent = 'Live';
      live.className = 'live-btn';
      live.addEventListener('click', (e) => { e.stopPropagation(); selectCamera(c.name).then(() => playLive()); });
      li.append(live);
    }
    li.addEventListener('click', () => selectCamera(c.name));
    ul.append(li);
    qcam.append(new Option(c.name, c.name));
  }
  qcam.value = keep;
  if (!state.cameras.length) ul.innerHTML = '<li class="muted">no cameras yet</li>';
  const cur = state.cameras.find((c) => c.name === state.camera);
  $('live').disabled = !cur || cur.state !== 'recording';
}

async function selectCamera(name) {
  if (state.camera !== name) {
    stopPlayer();
    state.camera = name;
    state.posMs = 0;
    $('camera-title').textContent = name;
    for (const li of $('cameras').children) li.classList.toggle('selected', li.dataset.camera === name);
    const cur = state.cameras.find((c) => c.name === name);
    $('live').disabled = !cur || cur.state !== 'recording';
  }
  await loadTimeline();
}

// ---------- timeline ----------

async function loadTimeline() {
  if (!state.camera) return;
  const span = $('span').value;
  const now = Date.now();
  const lookback = span === 'fit' ? 86400e3 : Number(span) * 1000;
  const from = now - lookback;
  const tl = await api(`${camPath(state.camera)}/timeline?from=${at(from)}&to=${at(now)}`);
  let ev = { events: [] };
  try {
    ev = await api(`/api/v1/events?camera=${encodeURIComponent(state.camera)}&from=${at(from)}&to=${at(now)}&limit=1000&pad_before=0&pad_after=0`);
  } catch (e) { if (e.status === 401) throw e; }
  state.timeline = tl;
  state.events = ev.events || [];
  if (span === 'fit') {
    const items = [...(tl.runs || []), ...(tl.gaps || [])];
    if (items.length) {
      let lo = Math.min(...items.map((r) => r.start_us)) / 1000;
      let hi = Math.max(...items.map((r) => r.end_us)) / 1000;
      if (tl.recording) hi = now;
      const pad = Math.max((hi - lo) * 0.05, 1000);
      state.win = { from: lo - pad, to: Math.min(hi + pad, now + pad) };
    } else {
      state.win = { from, to: now };
    }
  } else {
    state.win = { from, to: now };
  }
  drawTimeline();
}

function xOf(ms) {
  const { from, to } = state.win;
  return ((ms - from) / (to - from)) * 100;
}

function timeAtClientX(clientX) {
  const r = $('timeline').getBoundingClientRect();
  const f = Math.min(1, Math.max(0, (clientX - r.left) / r.width));
  return state.win.from + f * (state.win.to - state.win.from);
}

function place(el, startMs, endMs) {
  const a = Math.max(0, xOf(startMs));
  const b = Math.min(100, xOf(endMs));
  el.style.left = a + '%';
  el.style.width = Math.max(0, b - a) + '%';
}

function drawTimeline() {
  const tl = state.timeline;
  const track = $('track');
  track.replaceChildren();
  if (!tl) return;
  for (const r of tl.runs || []) {
    const d = document.createElement('div');
    d.className = 'run';
    d.dataset.start = r.start_us;
    d.dataset.end = r.end_us;
    d.title = `recorded ${fmtTime(r.start_us / 1000, true)} – ${fmtTime(r.end_us / 1000)} ` +
      `(${fmtDuration((r.end_us - r.start_us) / 1e6)}, ${r.segments} segments)`;
    place(d, r.start_us / 1000, r.end_us / 1000);
    track.append(d);
  }
  for (const g of tl.gaps || []) {
    const d = document.createElement('div');
    d.className = 'gap';
    d.dataset.reason = g.reason;
    d.title = `gap ${fmtTime(g.start_us / 1000, true)} – ${fmtTime(g.end_us / 1000)} ` +
      `(${fmtDuration((g.end_us - g.start_us) / 1e6)}): ${g.reason}${g.detail ? ' — ' + g.detail : ''}`;
    place(d, g.start_us / 1000, g.end_us / 1000);
    track.append(d);
  }
  if (tl.recording) {
    // What is being recorded now is not in the closed segments yet: drawn to now, played by Live.
    const ends = [...(tl.runs || []), ...(tl.gaps || [])].map((x) => x.end_us / 1000);
    const since = ends.length ? Math.max(...ends) : state.win.from;
    const now = Date.now();
    if (since < now) {
      const d = document.createElement('div');
      d.className = 'run recording';
      d.title = `recording since ${fmtTime(since, true)} (not closed yet: use Live)`;
      place(d, since, now);
      d.addEventListener('mousedown', (ev) => ev.stopPropagation());
      d.addEventListener('click', (ev) => { ev.stopPropagation(); playLive(); });
      track.append(d);
    }
  }
  for (const e of state.events) {
    const d = document.createElement('div');
    d.className = 'event';
    d.title = `${e.type}${e.object_class ? ' (' + e.object_class + ')' : ''} at ${fmtTime(e.start_us / 1000, true)}`;
    place(d, e.start_us / 1000, Math.max(e.end_us / 1000, e.start_us / 1000));
    d.addEventListener('click', (ev) => { ev.stopPropagation(); playRecorded(e.start_us / 1000 - 2000); });
    track.append(d);
  }
  // Axis: about 8 labels at round times.
  const axis = $('axis');
  axis.replaceChildren();
  const spanMs = state.win.to - state.win.from;
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600].map((s) => s * 1000);
  const step = steps.find((s) => spanMs / s <= 8) || 43200e3;
  for (let t = Math.ceil(state.win.from / step) * step; t < state.win.to; t += step) {
    const s = document.createElement('span');
    s.style.left = xOf(t) + '%';
    s.textContent = fmtTime(t);
    axis.append(s);
  }
  const days = tl.days || [];
  $('day-totals').textContent = days.map((d) => `${d.day}: ${fmtDuration(d.recorded_s)} recorded, ${d.gaps} gaps`).join(' · ') +
    (tl.recording ? ' · recording now' : '');
  drawCursor();
}

// The run holding T (ms), or the first one after it; null if none.
function runAtOrAfter(t) {
  for (const r of sortedRuns()) if (r.end_us / 1000 > t) return r;
  return null;
}

// The run holding T (ms) that started before it, or the last one before it; null if none.
function runBefore(t) {
  let found = null;
  for (const r of sortedRuns()) if (r.start_us / 1000 < t) found = r;
  return found;
}

function sortedRuns() {
  const runs = (state.timeline && state.timeline.runs) || [];
  return [...runs].sort((a, b) => a.start_us - b.start_us);
}

// Mouse: hover shows a thumbnail; click plays from there; drag plays the selected range.
let drag = null;
let hoverTimer = 0;
let lastThumbAt = '';

$('timeline').addEventListener('mousedown', (e) => {
  if (e.button !== 0 || !state.timeline) return;
  drag = { x: e.clientX, t0: timeAtClientX(e.clientX) };
});
window.addEventListener('mousemove', (e) => {
  if (drag && Math.abs(e.clientX - drag.x) > 4) {
    const t1 = timeAtClientX(e.clientX);
    const sel = $('selection');
    sel.hidden = false;
    place(sel, Math.min(drag.t0, t1), Math.max(drag.t0, t1));
  }
});
window.addEventListener('mouseup', (e) => {
  if (!drag) return;
  const d = drag;
  drag = null;
  const t1 = timeAtClientX(e.clientX);
  if (Math.abs(e.clientX - d.x) > 4) {
    playRecorded(Math.min(d.t0, t1), Math.max(d.t0, t1));
  } else {
    $('selection').hidden = true;
    playRecorded(d.t0);
  }
});
$('timeline').addEventListener('mousemove', (e) => {
  if (!state.timeline || !state.camera) return;
  const t = timeAtClientX(e.clientX);
  const hover = $('hover');
  const r = $('timeline').getBoundingClientRect();
  hover.hidden = false;
  hover.style.left = Math.min(Math.max(e.clientX - r.left, 85), r.width - 85) + 'px';
  $('hover-time').textContent = fmtTime(t, true);
  const run = runAtOrAfter(t);
  const inRun = run && run.start_us / 1000 <= t;
  $('hover-img').hidden = !inRun;
  clearTimeout(hoverTimer);
  if (inRun) {
    // Thumbnails are per keyframe: ask at most every 150 ms, and only for a new second.
    hoverTimer = setTimeout(() => {
      const key = at(Math.floor(t / 1000) * 1000);
      if (key === lastThumbAt) return;
      lastThumbAt = key;
      $('hover-img').src = mediaUrl(`${camPath(state.camera)}/thumbnail.jpg`, { at: key, width: 160 });
    }, 150);
  }
});
$('timeline').addEventListener('mouseleave', () => { $('hover').hidden = true; clearTimeout(hoverTimer); });
$('span').addEventListener('change', () => loadTimeline().catch(showError));

// ---------- player ----------

function stopPlayer() {
  if (state.hls) { state.hls.destroy(); state.hls = null; }
  state.trick = null;
  const v = $('video');
  v.removeAttribute('src');
  v.load();
  setMode('stopped');
  $('export').hidden = true;
  $('player-error').hidden = true;
}

// M: the player's state; LABEL: what the badge says (default M).
function setMode(m, label) {
  state.mode = m;
  $('mode').textContent = label || m;
  $('mode').classList.toggle('live', m.startsWith('live'));
  $('mode').classList.toggle('trick', m === 'trick');
}

function attach(video, url, onFatal) {
  if (window.Hls && Hls.isSupported()) {
    const hls = new Hls({ enableWorker: true, lowLatencyMode: false, backBufferLength: 60 });
    hls.on(Hls.Events.ERROR, (_, data) => {
      if (data.fatal) onFatal(`${data.type}: ${data.details}${data.response ? ' (HTTP ' + data.response.code + ')' : ''}`);
    });
    hls.loadSource(url);
    hls.attachMedia(video);
    return hls;
  }
  if (video.canPlayType('application/vnd.apple.mpegurl')) { video.src = url; return null; }
  onFatal('this browser cannot play HLS');
  return null;
}

function playerError(msg) {
  $('player-error').hidden = false;
  $('player-error').textContent = 'Playback: ' + msg;
}

// Plays the selected camera's recording from FROM (ms) to TO (ms; default: as far as recorded,
// at most 24 h). A time in a gap starts at the next run.
function playRecorded(fromMs, toMs) {
  if (!state.camera) return;
  const run = runAtOrAfter(fromMs);
  if (!run) { playerError('nothing recorded at or after ' + fmtTime(fromMs, true)); return; }
  const start = Math.max(fromMs, run.start_us / 1000);
  let end = toMs || Math.min(start + 24 * 3600e3 - 1000, Date.now());
  if (end <= start) end = start + 1000;
  stopPlayer();
  state.playFromMs = start;
  const url = mediaUrl(`${camPath(state.camera)}/hls.m3u8`, { from: at(start), to: at(end) });
  const v = $('video');
  state.hls = attach(v, url, playerError);
  v.playbackRate = Number($('speed').value);
  v.play().catch(() => {});
  setMode('recorded');
  const exp = $('export');
  exp.href = mediaUrl(`${camPath(state.camera)}/export.mp4`, { from: at(start), to: at(end), download: 1 });
  exp.hidden = false;
}

// Live view: the live playlist exists once the recording has cut its first segment (~2 s); until
// then vigild answers 404, so a few retries bridge a camera that has just started.
function playLive(attempt = 0) {
  if (!state.camera) return;
  stopPlayer();
  const v = $('video');
  const cam = state.camera;
  state.hls = attach(v, mediaUrl(`${camPath(cam)}/live.m3u8`), (m) => {
    if (attempt < 8 && state.camera === cam && /manifest/i.test(m)) {
      setMode('live: waiting');
      setTimeout(() => { if (state.camera === cam && state.mode.startsWith('live')) playLive(attempt + 1); }, 1000);
      return;
    }
    playerError(m + ' (is the camera recording?)');
  });
  v.play().catch(() => {});
  setMode('live');
}

// The wall time of what the video shows (hls.js knows it from EXT-X-PROGRAM-DATE-TIME; a
// keyframe clip maps its media time linearly onto the recorded range it was asked for).
function playingMs() {
  if (state.mode === 'trick') return trickMs();
  if (state.mode === 'paused') return state.posMs;
  if (state.hls && state.hls.playingDate) return state.hls.playingDate.getTime();
  if (state.mode === 'recorded') return state.playFromMs + $('video').currentTime * 1000;
  return 0;
}

// The recording position to continue from: what plays now, else the last one shown.
function currentMs() {
  const t = state.mode === 'stopped' ? 0 : playingMs();
  return t || state.posMs;
}

function showPosition() {
  const t = playingMs();
  if (t) state.posMs = t;
  $('position').textContent = t ? fmtTime(t, true) : '';
  $('position').dataset.ms = t ? String(Math.round(t)) : '';
  drawCursor();
}

// ---------- keyframe fast-forward / rewind ----------
// Trick play is a chain of keyframe-only MP4 clips (export.mp4?keyframes=1&rate=R[&reverse=1]),
// each covering one chunk of the recording within one run: 60 s of it, or about 8 s of playing at
// high rates, at most 120 s (vigild plans and bounds an export by the whole GOPs it spans: a long
// chunk of a high-rate camera would be refused as too large). When a clip ends the next chunk
// follows (gaps are skipped); at the ends of what the timeline knows the player stops there. A
// clip's media time t shows the recording at FROM + t·R (forward) or TO − t·R (rewind): exact to
// within the GOP each keyframe stands for. ▶ plays normally from the position reached.

const TRICK_MIN_CHUNK_MS = 60e3;
const TRICK_MAX_CHUNK_MS = 120e3;
const TRICK_CHUNK_PLAY_MS = 8e3;

function trickMs() {
  const t = state.trick;
  if (!t) return 0;
  const d = $('video').currentTime * t.rate * 1000;
  return t.dir > 0 ? Math.min(t.from + d, t.to) : Math.max(t.to - d, t.from);
}

// The chunk to play from POS (ms) in direction DIR, or null at the end (start) of the recording.
function trickChunk(dir, rate, pos) {
  const span = Math.min(TRICK_MAX_CHUNK_MS, Math.max(TRICK_MIN_CHUNK_MS, rate * TRICK_CHUNK_PLAY_MS));
  if (dir > 0) {
    const run = runAtOrAfter(pos + 1);  // at least 1 ms of it left
    if (!run) return null;
    const from = Math.max(pos, run.start_us / 1000);
    return { from, to: Math.min(from + span, run.end_us / 1000) };
  }
  const run = runBefore(pos - 1);
  if (!run) return null;
  const to = Math.min(pos, run.end_us / 1000);
  return { from: Math.max(run.start_us / 1000, to - span), to };
}

function startTrick(dir) {
  if (!state.camera || !state.timeline) return;
  const pos = currentMs() || (dir > 0 ? state.win.from : state.win.to);
  const rate = Number($('trick-rate').value);
  stopPlayer();
  state.posMs = pos;
  state.trick = { dir, rate, from: pos, to: pos };
  playTrickChunk(pos);
}

// Plays the chunk after (before) POS, or stops at the end (start) of the recording.
function playTrickChunk(pos) {
  const t = state.trick;
  const chunk = trickChunk(t.dir, t.rate, pos);
  const v = $('video');
  if (!chunk) {
    state.trick = null;
    v.pause();
    state.posMs = pos;
    setMode('paused', t.dir > 0 ? 'end of recording' : 'start of recording');
    showPosition();
    return;
  }
  Object.assign(t, chunk);
  v.src = trickUrl(t, chunk);
  v.playbackRate = 1;
  v.play().catch(() => {});
  setMode('trick', `${t.dir > 0 ? 'fast-forward' : 'rewind'} ${t.rate}×`);
  showPosition();
  // The next chunk is built while this one plays: a HEAD makes vigild read and cache it (no body
  // comes back), so the <video>'s request for it is a cache hit.
  const next = trickChunk(t.dir, t.rate, t.dir > 0 ? chunk.to : chunk.from);
  if (next) fetch(trickUrl(t, next), { method: 'HEAD', cache: 'no-store' }).catch(() => {});
}

function trickUrl(t, chunk) {
  const params = { from: at(chunk.from), to: at(chunk.to), keyframes: 1, rate: t.rate };
  if (t.dir < 0) params.reverse = 1;
  return mediaUrl(`${camPath(state.camera)}/export.mp4`, params);
}

$('video').addEventListener('ended', () => {
  const t = state.trick;
  if (state.mode !== 'trick' || !t) return;
  playTrickChunk(t.dir > 0 ? t.to : t.from);
});

$('video').addEventListener('error', () => {
  if (state.mode !== 'trick' || !state.trick) return;
  // A <video> does not see the HTTP answer: ask again for the reason (a JSON error).
  const src = $('video').src;
  const pos = trickMs();
  state.trick = null;
  state.posMs = pos || state.posMs;
  setMode('paused', 'trick play failed');
  fetch(src, { cache: 'no-store' })
    .then(async (r) => (r.ok ? 'the clip could not be decoded' : `HTTP ${r.status}: ${(await r.json()).error}`))
    .catch((e) => String(e.message || e))
    .then((why) => playerError('keyframe clip: ' + why));
});

// ▶: normal playback from the position reached (a paused recording resumes).
function playNormal() {
  if (!state.camera) return;
  const v = $('video');
  if (state.mode === 'recorded') {
    v.playbackRate = Number($('speed').value);
    v.play().catch(() => {});
    return;
  }
  let pos = currentMs();
  const runs = sortedRuns();
  if (!runs.length) return;
  const last = runs[runs.length - 1];
  if (!pos) pos = runs[0].start_us / 1000;
  // At (or past) the end of the recording: its last seconds.
  if (pos >= last.end_us / 1000 - 500) pos = Math.max(last.start_us / 1000, last.end_us / 1000 - 5000);
  playRecorded(pos);
}

function drawCursor() {
  const c = $('cursor');
  const t = state.mode === 'stopped' ? 0 : playingMs();
  if (!t || t < state.win.from || t > state.win.to) { c.hidden = true; return; }
  c.hidden = false;
  c.style.left = xOf(t) + '%';
}

$('video').addEventListener('timeupdate', showPosition);
$('ffwd').addEventListener('click', () => startTrick(1));
$('rew').addEventListener('click', () => startTrick(-1));
$('play').addEventListener('click', playNormal);
$('trick-rate').addEventListener('change', () => { if (state.mode === 'trick') startTrick(state.trick.dir); });
$('live').addEventListener('click', () => playLive());
// (A keyframe clip keeps playbackRate 1: its rate is the trick-play rate.)
$('speed').addEventListener('change', () => { if (state.mode !== 'trick') $('video').playbackRate = Number($('speed').value); });
$('back10').addEventListener('click', () => { const v = $('video'); v.currentTime = Math.max(0, v.currentTime - 10); });
$('fwd10').addEventListener('click', () => { const v = $('video'); v.currentTime += 10; });

// ---------- event search ----------

function searchQuery(cursor) {
  const p = new URLSearchParams();
  p.set('from', $('q-from').value.trim() || '-24h');
  p.set('to', $('q-to').value.trim() || 'now');
  if ($('q-camera').value) p.set('camera', $('q-camera').value);
  if ($('q-type').value.trim()) p.set('type', $('q-type').value.trim());
  if ($('q-class').value.trim()) p.set('object_class', $('q-class').value.trim());
  if ($('q-conf').value !== '') p.set('min_confidence', $('q-conf').value);
  p.set('limit', '25');
  if (cursor) p.set('cursor', cursor);
  return '/api/v1/events?' + p.toString();
}

async function search(cursor) {
  const status = $('search-status');
  if (!cursor) $('results').replaceChildren();
  status.textContent = 'searching…';
  try {
    const body = await api(searchQuery(cursor));
    for (const e of body.events || []) $('results').append(resultItem(e));
    state.searchNext = body.next || null;
    $('more').hidden = !state.searchNext;
    const n = $('results').children.length;
    status.textContent = n ? `${n} event${n > 1 ? 's' : ''}` : 'no events match';
  } catch (e) {
    status.textContent = 'search failed: ' + e.message;
  }
}

function resultItem(e) {
  const li = document.createElement('li');
  li.className = 'result';
  const img = document.createElement('img');
  img.alt = '';
  img.loading = 'lazy';
  if (e.clip && e.clip.recorded) {
    img.src = mediaUrl(`${camPath(e.camera)}/thumbnail.jpg`, { at: at(e.start_us / 1000), width: 240 });
  }
  const text = document.createElement('div');
  const conf = e.confidence != null ? ` ${Math.round(e.confidence * 100)}%` : '';
  text.innerHTML = '<b></b> <span class="muted"></span><br><span></span>';
  text.children[0].textContent = `${e.type}${e.object_class ? ' · ' + e.object_class : ''}${conf}`;
  text.children[1].textContent = e.camera;
  text.children[3].textContent = fmtTime(e.start_us / 1000, true) +
    (e.end_us > e.start_us ? ` (${fmtDuration((e.end_us - e.start_us) / 1e6)})` : '') +
    (e.clip && !e.clip.recorded ? ' — no video recorded' : '');
  const actions = document.createElement('div');
  const play = document.createElement('button');
  play.type = 'button';
  play.textContent = 'Play';
  play.className = 'play';
  play.disabled = !(e.clip && e.clip.recorded);
  const exp = document.createElement('a');
  exp.className = 'button';
  exp.textContent = 'MP4';
  exp.hidden = play.disabled;
  if (e.clip) exp.href = mediaUrl(e.clip.export_url, { download: 1 });
  actions.append(play, ' ', exp);
  li.append(img, text, actions);
  play.addEventListener('click', () => {
    // Plays in place, under the result.
    let v = li.querySelector('video');
    if (v) { if (v._hls) v._hls.destroy(); v.remove(); play.textContent = 'Play'; return; }
    v = document.createElement('video');
    v.controls = true;
    v.muted = true;
    v.playsInline = true;
    li.append(v);
    v._hls = attach(v, mediaUrl(e.clip.hls_url), (m) => { text.children[3].textContent += ' — playback failed: ' + m; });
    v.play().catch(() => {});
    play.textContent = 'Close';
  });
  return li;
}

$('search').addEventListener('submit', (e) => { e.preventDefault(); search(null); });
$('more').addEventListener('click', () => search(state.searchNext));

// ---------- disks (/metrics) ----------

// Prometheus text → [{name, labels, value}] for the metrics the panel shows.
function parseMetrics(text) {
  const out = [];
  const re = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)/;
  for (const line of text.split('\n')) {
    if (!line.startsWith('vigil_disk_')) continue;
    const m = re.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const kv of m[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[kv[1]] = kv[2].replace(/\\(.)/g, '$1');
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

async function loadDisks() {
  const res = await fetch('/metrics', { headers: { Authorization: 'Bearer ' + state.token }, cache: 'no-store' });
  if (!res.ok) throw new ApiError(res.status, 'metrics: ' + res.statusText);
  const disks = new Map();
  for (const s of parseMetrics(await res.text())) {
    const d = s.labels.disk;
    if (d === undefined) continue;
    if (!disks.has(d)) disks.set(d, { misses: 0 });
    const o = disks.get(d);
    if (s.name === 'vigil_disk_deadline_misses_total') o.misses += s.value;
    else o[s.name.slice('vigil_disk_'.length)] = s.value;
  }
  const box = $('disks');
  if (!disks.size) { box.innerHTML = '<p class="muted">no volumes open</p>'; return; }
  const table = document.createElement('table');
  const row = (label, value, cls) => {
    const tr = table.insertRow();
    tr.insertCell().textContent = label;
    const td = tr.insertCell();
    td.textContent = value;
    if (cls) td.className = cls;
    return tr;
  };
  const pct = (x) => (x == null || Number.isNaN(x) ? '–' : (x * 100).toFixed(0) + ' %');
  for (const [name, d] of disks) {
    const head = table.insertRow();
    const c = head.insertCell();
    c.colSpan = 2;
    c.className = 'disk-name';
    c.textContent = name;
    head.dataset.disk = name;
    row('admitted streams', d.admitted_streams ?? '–');
    row('admitted rate', d.admitted_rate_bytes_per_second != null ? (d.admitted_rate_bytes_per_second * 8 / 1e6).toFixed(2) + ' Mbit/s' : '–');
    row('predicted / budget', `${pct(d.admission_predicted_busy_ratio)} / ${pct(d.admission_budget_ratio)}`);
    row('utilisation (last cycle)', pct(d.last_cycle_utilisation_ratio));
    row('slack (last cycle)', d.last_cycle_slack_seconds != null ? (d.last_cycle_slack_seconds * 1000).toFixed(0) + ' ms' : '–',
      d.last_cycle_slack_seconds < 0 ? 'bad' : '');
    row('deadline misses', d.misses, d.misses > 0 ? 'bad' : '');
    if (d.profiled === 0) row('profile', 'none: nothing admitted', 'bad');
    if (d.model_optimistic === 1) row('admission', 'paused (profile optimistic)', 'bad');
  }
  box.replaceChildren(table);
}

// ---------- start ----------

function showError(e) {
  if (e && e.status === 401) return;
  setStatus(String(e && e.message ? e.message : e), true);
}

let timers = [];

async function refresh() {
  try {
    await loadCameras();
    if (state.camera) await loadTimeline();
    setStatus('updated ' + fmtTime(Date.now()));
  } catch (e) { showError(e); }
  loadDisks().catch(() => { $('disks').innerHTML = '<p class="muted">metrics unavailable</p>'; });
}

async function start() {
  timers.forEach(clearInterval);
  timers = [];
  $('app').hidden = false;
  $('login').hidden = true;
  const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  await refresh();
  const want = hash.get('camera') || (state.cameras[0] && state.cameras[0].name);
  if (want && !state.camera) {
    if (hash.get('span')) $('span').value = hash.get('span');
    await selectCamera(want).catch(showError);
  }
  timers.push(setInterval(refresh, 5000));
  timers.push(setInterval(() => { if (state.mode !== 'stopped') drawCursor(); }, 500));
  document.body.dataset.ready = '1';
}

state.token = readToken();
if (state.token) start();
else askToken();
