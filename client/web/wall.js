// Vigil web UI: the video wall. 1×1 … 4×4 tiles, each a camera (the group filter's cameras in
// order, or one picked per tile), live by default. In recorded mode every tile plays the same
// instant of its camera's recording, on one shared timeline: a master clock (the wall time all
// tiles should show) runs from the instant sought, and every 250 ms each tile's shown wall time
// (its HLS fragment's EXT-X-PROGRAM-DATE-TIME plus the media time into it) is compared with it; a
// tile more than DRIFT_MS off is moved (currentTime) onto it. Seeking (a click on the shared
// timeline, ±10 s) reloads every tile from the new instant. Tiles ask for a camera's substream
// (stream=sub) when the camera lists one (its streams[] has role "sub"), else its main stream.
// Loaded after player.js (index.html): attach(), mediaUrl() and the timeline's helpers exist.
'use strict';

const DRIFT_MS = 250;
const SYNC_EVERY_MS = 250;

const wall = {
  mode: 'live',  // live | recorded
  tiles: [],     // { el, select, status, video, hls, camera }
  picks: [],     // cameras picked per tile (by the tile's select); '' or missing: the group's
  master: { baseMs: 0, t0: 0, playing: false, paused: false },
  timelines: new Map(),  // camera → its last timeline answer (recorded mode)
  win: { from: 0, to: 1 },
  timers: [],
  gen: 0,        // fillWall's calls: only the newest builds the grid
};

// ---------- tiles ----------

function wallSide() { return Number($('wall-layout').value) || 2; }

// Which camera each tile shows: its pick, else the filtered cameras in order.
function wallCameras() {
  const n = wallSide() ** 2;
  const names = filteredCameras().map((c) => c.name);
  const out = [];
  for (let i = 0; i < n; i++) out.push(wall.picks[i] || names[i] || '');
  return out;
}

// The camera's details (its streams: is there a substream?), fetched once a minute at most.
async function cameraDetails(name) {
  const have = state.details.get(name);
  if (have && Date.now() - have.at < 60e3) return have.body;
  try {
    const body = await api(camPath(name));
    state.details.set(name, { at: Date.now(), body });
    return body;
  } catch (e) {
    if (e.status === 401) throw e;
    return null;
  }
}

// stream=sub when the camera lists a substream; else nothing (its main stream).
function streamParams(name) {
  const d = state.details.get(name);
  const streams = (d && d.body && d.body.streams) || [];
  return streams.some((s) => s.role === 'sub') ? { stream: 'sub' } : {};
}

// The runs a tile shows: its substream's when the tile plays the substream (the timeline answer's
// `substream` object), else the main stream's. The sub stream may start later or have gaps the main
// one has not: the wall's timeline must show what its tiles can actually play.
function tileRuns(name) {
  const tl = name && wall.timelines.get(name);
  if (!tl) return [];
  const track = streamParams(name).stream === 'sub' && tl.substream ? tl.substream : tl;
  return track.runs || [];
}

function destroyTile(t) {
  if (t.hls) { t.hls.destroy(); t.hls = null; }
  t.video.removeAttribute('src');
  t.video.load();
  clearTimeout(t.retry);
}

function setTileStatus(t, text, cls) {
  t.status.textContent = text;
  t.el.dataset.state = cls || text;
}

// Builds the grid for the layout and starts every tile in the current mode.
// (A newer call — the layout or the group changed meanwhile — wins: GEN.)
async function fillWall() {
  const gen = ++wall.gen;
  const side = wallSide();
  const names = wallCameras();
  await Promise.all([...new Set(names.filter(Boolean))].map(cameraDetails)).catch(showError);
  if (gen !== wall.gen) return;
  stopWallTiles();
  const box = $('wall');
  box.dataset.layout = String(side);
  box.style.gridTemplateColumns = `repeat(${side}, 1fr)`;
  wall.tiles = names.map((name, i) => makeTile(i, name));
  box.replaceChildren(...wall.tiles.map((t) => t.el));
  if (wall.mode === 'recorded') {
    await loadWallTimelines();
    if (gen !== wall.gen) return;
  }
  for (const t of wall.tiles) startTile(t);
}

function makeTile(i, name) {
  const el = document.createElement('div');
  el.className = 'tile';
  el.tabIndex = 0;
  el.dataset.index = String(i);
  el.setAttribute('role', 'group');
  const head = document.createElement('div');
  head.className = 'tile-head';
  const select = document.createElement('select');
  select.setAttribute('aria-label', `Camera of tile ${i + 1}`);
  select.append(new Option('(none)', ''));
  for (const c of state.cameras) select.append(new Option(c.name, c.name));
  select.value = name;
  const status = document.createElement('span');
  status.className = 'tile-status';
  head.append(select, status);
  const video = document.createElement('video');
  video.muted = true;
  video.playsInline = true;
  video.autoplay = true;
  el.append(head, video);
  const t = { el, select, status, video, hls: null, camera: name, retry: 0 };
  el.dataset.camera = name;
  el.setAttribute('aria-label', name ? `Tile ${i + 1}: ${name}` : `Tile ${i + 1}: empty`);
  select.addEventListener('change', async () => {
    wall.picks[i] = select.value;
    destroyTile(t);
    t.camera = select.value;
    el.dataset.camera = t.camera;
    if (t.camera) await cameraDetails(t.camera);
    if (wall.mode === 'recorded') await loadWallTimelines();
    startTile(t);
  });
  // Double-click, or Enter on the focused tile: this camera alone in the camera view.
  el.addEventListener('dblclick', (e) => { if (e.target !== select) openTile(t); });
  el.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target === el) openTile(t); });
  video.addEventListener('playing', () => {
    if (wall.mode === 'recorded' && !wall.master.playing && !wall.master.paused) startMaster();
  });
  return t;
}

function startTile(t, attempt = 0) {
  destroyTile(t);
  if (!t.camera) { setTileStatus(t, 'empty'); return; }
  const cam = t.camera;
  const params = streamParams(cam);
  const which = params.stream === 'sub' ? 'substream' : 'main stream';
  t.el.dataset.stream = params.stream || 'main';
  if (wall.mode === 'live') {
    t.hls = attach(t.video, mediaUrl(`${camPath(cam)}/live.m3u8`, params), (m) => {
      // No live playlist before the recording's first segment (or not recording): retry.
      if (attempt < 30 && t.camera === cam && wall.mode === 'live') {
        setTileStatus(t, 'waiting for live', 'waiting');
        t.retry = setTimeout(() => startTile(t, attempt + 1), 2000);
        return;
      }
      setTileStatus(t, 'live failed: ' + m, 'failed');
    });
    setTileStatus(t, `live · ${which}`, 'live');
  } else {
    const from = wall.master.baseMs;
    const to = Math.max(from + 1000, Math.min(from + 3600e3, Date.now()));
    t.hls = attach(t.video, mediaUrl(`${camPath(cam)}/hls.m3u8`, { from: at(from), to: at(to), ...params }),
      (m) => setTileStatus(t, /manifest/i.test(m) ? 'nothing recorded here' : 'playback failed: ' + m, 'norecording'), true);
    setTileStatus(t, `recorded · ${which}`, 'recorded');
  }
  t.video.play().catch(() => {});
}

function stopWallTiles() {
  for (const t of wall.tiles) destroyTile(t);
}

function stopWall() {
  stopWallTiles();
  wall.timers.forEach(clearInterval);
  wall.timers = [];
}

function openTile(t) {
  if (!t.camera) return;
  const ms = wall.mode === 'recorded' ? masterMs() : 0;
  showView('camera');
  selectCamera(t.camera).then(() => (ms ? playRecorded(ms) : playLive())).catch(showError);
}

// ---------- recorded mode: master clock, sync, shared timeline ----------

function masterMs() {
  const m = wall.master;
  if (!m.playing) return m.baseMs;
  return m.baseMs + (performance.now() - m.t0);
}

function startMaster() {
  wall.master.t0 = performance.now();
  wall.master.playing = true;
}

// The wall time a tile shows: its fragment's program date-time plus the media time into it.
function tileWallMs(t) {
  const h = t.hls;
  if (!h) return 0;
  const level = h.levels && h.levels[h.currentLevel >= 0 ? h.currentLevel : 0];
  const frags = level && level.details && level.details.fragments;
  const ct = t.video.currentTime;
  if (frags && frags.length && t.video.readyState >= 2) {
    let f = frags[0];
    for (const x of frags) { if (x.start <= ct + 1e-3) f = x; else break; }
    if (f.programDateTime) return f.programDateTime + (ct - f.start) * 1000;
  }
  return h.playingDate ? h.playingDate.getTime() : 0;
}

// Moves every tile onto the master clock (or pauses it where it has nothing at that time).
function syncWall() {
  if (wall.mode !== 'recorded') return;
  // Every tile waiting for data (a slow network or disk): the clock waits too, instead of running
  // away from all of them; the next tile that plays starts it again.
  const active = wall.tiles.filter((t) => t.hls && t.camera && tileWallMs(t));
  if (wall.master.playing && active.length && active.every((t) => t.video.readyState < 3 || t.video.seeking)) {
    wall.master.baseMs = masterMs();
    wall.master.playing = false;
  }
  const m = masterMs();
  $('wall-clock').textContent = fmtTime(m, true);
  $('wall-clock').dataset.ms = String(Math.round(m));
  let worst = 0;
  for (const t of wall.tiles) {
    if (!t.hls || !t.camera) continue;
    const shown = tileWallMs(t);
    if (!shown) { t.el.dataset.driftMs = ''; continue; }
    const drift = shown - m;
    t.el.dataset.driftMs = String(Math.round(drift));
    t.el.dataset.ms = String(Math.round(shown));
    if (wall.master.paused) { t.video.pause(); continue; }
    if (Math.abs(drift) > DRIFT_MS && !t.video.seeking) {
      const target = t.video.currentTime - drift / 1000;
      if (target >= 0) t.video.currentTime = target;
    } else {
      worst = Math.max(worst, Math.abs(drift));
    }
    if (t.video.paused && !t.video.ended) t.video.play().catch(() => {});
  }
  $('wall-sync').textContent = wall.master.playing ? `tiles within ${Math.round(worst)} ms of the clock` : 'starting…';
  drawWallCursor();
}

function seekWall(ms) {
  wall.master = { baseMs: ms, t0: 0, playing: false, paused: false };
  $('wall-play').textContent = 'Pause';
  for (const t of wall.tiles) startTile(t);
  syncWall();
}

async function loadWallTimelines() {
  const now = Date.now();
  const from = now - 3600e3;
  const names = [...new Set(wall.tiles.map((t) => t.camera).filter(Boolean))];
  const got = await Promise.all(names.map((n) =>
    api(`${camPath(n)}/timeline?from=${at(from)}&to=${at(now)}`).catch((e) => { if (e.status === 401) throw e; return null; })));
  wall.timelines = new Map(names.map((n, i) => [n, got[i]]));
  // The window: the recorded span of the wall's cameras in the last hour, up to now.
  const starts = names.flatMap((n) => tileRuns(n).map((r) => r.start_us / 1000));
  const lo = starts.length ? Math.min(...starts) : now - 600e3;
  const pad = Math.max((now - lo) * 0.03, 2000);
  wall.win = { from: lo - pad, to: now + pad };
  drawWallTimeline();
}

function wallX(ms) { return ((ms - wall.win.from) / (wall.win.to - wall.win.from)) * 100; }

// One row per tile: its camera's runs (the open one marked, as on the camera view's timeline).
function drawWallTimeline() {
  const rows = $('wall-rows');
  rows.replaceChildren();
  for (const t of wall.tiles) {
    const row = document.createElement('div');
    row.className = 'row';
    row.dataset.camera = t.camera;
    const label = document.createElement('span');
    label.className = 'row-label';
    label.textContent = t.camera || '–';
    row.append(label);
    for (const r of tileRuns(t.camera)) {
      const d = document.createElement('div');
      d.className = r.open ? 'run open' : 'run';
      d.dataset.start = r.start_us;
      d.dataset.end = r.end_us;
      d.title = `${t.camera}: recorded ${fmtTime(r.start_us / 1000, true)} – ${fmtTime(r.end_us / 1000)}${r.open ? ' (still recording)' : ''}`;
      const a = Math.max(0, wallX(r.start_us / 1000));
      const b = Math.min(100, wallX(r.end_us / 1000));
      d.style.left = a + '%';
      d.style.width = Math.max(0, b - a) + '%';
      row.append(d);
    }
    rows.append(row);
  }
  drawTimeAxis($('wall-axis'), wall.win.from, wall.win.to, wallX);
  drawWallCursor();
}

function drawWallCursor() {
  const c = $('wall-cursor');
  const m = masterMs();
  c.hidden = wall.mode !== 'recorded' || m < wall.win.from || m > wall.win.to;
  c.style.left = wallX(m) + '%';
}

function setWallMode(mode) {
  wall.mode = mode;
  $('wall-live').setAttribute('aria-pressed', String(mode === 'live'));
  $('wall-recorded').setAttribute('aria-pressed', String(mode === 'recorded'));
  $('wall-bar').hidden = mode !== 'recorded';
  $('wall-timeline').hidden = mode !== 'recorded';
  $('wall').dataset.mode = mode;
}

// Recorded mode from MS, by default 30 s ago — or later, where every tile's camera has recorded
// (cameras that started recording less than 30 s ago), if that is at least 5 s ago.
async function enterRecorded(ms) {
  setWallMode('recorded');
  await loadWallTimelines();
  if (!ms) {
    ms = Date.now() - 30e3;
    const starts = [];
    for (const name of wall.timelines.keys()) {
      const run = tileRuns(name).find((r) => r.end_us / 1000 > ms);
      if (run) starts.push(run.start_us / 1000);
    }
    const latest = Math.max(ms, ...starts);
    if (latest < Date.now() - 5e3) ms = latest + 500;
  }
  seekWall(ms);
}

function startWallTimers() {
  wall.timers.forEach(clearInterval);
  wall.timers = [
    setInterval(syncWall, SYNC_EVERY_MS),
    // Open runs grow: the shared timeline is asked again every 2 s.
    setInterval(() => { if (wall.mode === 'recorded' && state.view === 'wall') loadWallTimelines().catch(showError); }, 2000),
  ];
}

function enterWall() {
  startWallTimers();
  fillWall().catch(showError);
}

$('wall-layout').addEventListener('change', () => { wall.picks = []; fillWall().catch(showError); });
$('wall-live').addEventListener('click', () => { setWallMode('live'); fillWall().catch(showError); });
$('wall-recorded').addEventListener('click', () => enterRecorded().catch(showError));
$('wall-play').addEventListener('click', () => {
  const m = wall.master;
  if (m.paused) {
    m.paused = false;
    m.t0 = performance.now();
    m.playing = true;
    for (const t of wall.tiles) t.video.play().catch(() => {});
    $('wall-play').textContent = 'Pause';
  } else {
    m.baseMs = masterMs();
    m.paused = true;
    m.playing = false;
    for (const t of wall.tiles) t.video.pause();
    $('wall-play').textContent = 'Play';
  }
});
$('wall-back').addEventListener('click', () => seekWall(masterMs() - 10e3));
$('wall-fwd').addEventListener('click', () => seekWall(Math.min(masterMs() + 10e3, Date.now() - 2000)));
$('wall-timeline').addEventListener('click', (e) => {
  const r = $('wall-timeline').getBoundingClientRect();
  const f = Math.min(1, Math.max(0, (e.clientX - r.left) / r.width));
  seekWall(Math.min(wall.win.from + f * (wall.win.to - wall.win.from), Date.now() - 2000));
});
$('wall-timeline').addEventListener('keydown', (e) => {
  if (e.key === 'ArrowLeft') { e.preventDefault(); seekWall(masterMs() - 10e3); }
  if (e.key === 'ArrowRight') { e.preventDefault(); seekWall(Math.min(masterMs() + 10e3, Date.now() - 2000)); }
});
