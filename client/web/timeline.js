// Vigil web UI: the camera list and the timeline of the selected camera (runs, gaps, events),
// with thumbnails on hover and click or drag to play. Loaded after api.js (index.html).
'use strict';

// ---------- cameras ----------

async function loadCameras() {
  const body = await api('/api/v1/cameras');
  state.cameras = body.cameras || [];
  const ul = $('cameras');
  ul.replaceChildren();
  const qcam = $('q-camera');
  const keep = qcam.value;
  qcam.replaceChildren(new Option('all', ''));
  for (const c of state.cameras) qcam.append(new Option(c.name, c.name));
  for (const c of filteredCameras()) {
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
  }
  qcam.value = keep;
  if (!state.cameras.length) ul.innerHTML = '<li class="muted">no cameras yet</li>';
  else if (!ul.children.length) ul.innerHTML = '<li class="muted">no camera in this group</li>';
  const cur = state.cameras.find((c) => c.name === state.camera);
  $('live').disabled = !cur || cur.state !== 'recording';
}

// ---------- groups ----------

// The camera groups (GET /api/v1/groups) into the group filter; an older vigild without groups
// leaves just "all cameras".
async function loadGroups() {
  try {
    state.groups = (await api('/api/v1/groups')).groups || [];
  } catch (e) {
    if (e.status === 401) throw e;
    state.groups = [];
  }
  const sel = $('group-filter');
  const keep = sel.value;
  sel.replaceChildren(new Option('all cameras', ''));
  for (const g of state.groups) sel.append(new Option(`${g.name} (${g.cameras.length})`, String(g.id)));
  sel.value = state.groups.some((g) => String(g.id) === keep) ? keep : '';
}

// The cameras the group filter shows, in the group's order (all cameras: the list's order).
function filteredCameras() {
  const id = $('group-filter').value;
  const g = id && state.groups.find((x) => String(x.id) === id);
  if (!g) return state.cameras;
  return g.cameras.map((n) => state.cameras.find((c) => c.name === n)).filter(Boolean);
}

$('group-filter').addEventListener('change', () => {
  loadCameras().catch(showError);
  if (state.view === 'wall') fillWall().catch(showError);
});

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
  await Promise.all([loadTimeline(), loadRetention()]);
}

// What the selected camera keeps: its age limit and byte quota (retention_days, retention_bytes)
// beside what it holds now (recorded_bytes, what counts against the quota).
async function loadRetention() {
  const name = state.camera;
  const el = $('retention');
  try {
    const c = await api(camPath(name));
    if (state.camera !== name) return;
    showCameraAudio(c);  // player.js: the sound button
    const kept = [];
    if (c.retention_days != null) kept.push(`${c.retention_days} days`);
    if (c.retention_bytes != null) kept.push(`at most ${fmtBytes(c.retention_bytes)}`);
    el.textContent = `${fmtBytes(c.recorded_bytes)} recorded · kept ` +
      (kept.length ? kept.join(', ') : 'until space is needed');
    el.dataset.recordedBytes = c.recorded_bytes;
  } catch (e) {
    el.textContent = '';  // an older vigild, or a token that may not read it: nothing to show
  }
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
    // An open run holds the segment being written: it ends at the last durable cycle (a second or
    // so before now) and grows; everything in it plays recorded, like any other run.
    d.className = r.open ? 'run open' : 'run';
    d.dataset.start = r.start_us;
    d.dataset.end = r.end_us;
    d.title = `recorded ${fmtTime(r.start_us / 1000, true)} – ${fmtTime(r.end_us / 1000)} ` +
      `(${fmtDuration((r.end_us - r.start_us) / 1e6)}, ${r.segments} segments${r.open ? ', still recording' : ''})`;
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
    // The live edge: from the last durable time (the open run's end) to now, what is being
    // written this cycle. It is not recorded video yet (no reader sees an unacknowledged frame):
    // a click there plays Live.
    const ends = [...(tl.runs || []), ...(tl.gaps || [])].map((x) => x.end_us / 1000);
    const since = ends.length ? Math.max(...ends) : state.win.from;
    const now = Date.now();
    if (since < now) {
      const d = document.createElement('div');
      d.className = 'run recording live-edge';
      d.title = `being written now (durable up to ${fmtTime(since, true)}): click for Live`;
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
  drawTimeAxis($('axis'), state.win.from, state.win.to, xOf);
  const days = tl.days || [];
  $('day-totals').textContent = days.map((d) => `${d.day}: ${fmtDuration(d.recorded_s)} recorded, ${d.gaps} gaps`).join(' · ') +
    (tl.recording ? ' · recording now' : '');
  drawCursor();
}

// Whether the timeline shows a recording that grows at its right end (an open run or the live
// edge, with now in the window): then it is asked again every second, not every 5 s.
function showsLiveEdge() {
  const tl = state.timeline;
  if (!tl || !state.win) return false;
  const growing = tl.recording || (tl.runs || []).some((r) => r.open);
  return growing && state.win.to >= Date.now() - 1000;
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
    state.selection = { from: Math.min(d.t0, t1), to: Math.max(d.t0, t1) };
    $('lock-selection').hidden = !state.admin;
    playRecorded(state.selection.from, state.selection.to);
  } else {
    $('selection').hidden = true;
    state.selection = null;
    $('lock-selection').hidden = true;
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


// A time axis in AXIS: about 8 labels at round times between FROM and TO (ms), each placed at
// X_OF(t) percent. The camera timeline and the wall's shared timeline both draw it.
function drawTimeAxis(axis, from, to, xOfTime) {
  axis.replaceChildren();
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600].map((s) => s * 1000);
  const step = steps.find((s) => (to - from) / s <= 8) || 43200e3;
  for (let t = Math.ceil(from / step) * step; t < to; t += step) {
    const s = document.createElement('span');
    s.style.left = xOfTime(t) + '%';
    s.textContent = fmtTime(t);
    axis.append(s);
  }
}
