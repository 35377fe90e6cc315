// Vigil web UI: event search, the disks panel, and start-up. Loaded last (index.html): the
// functions of api.js, timeline.js and player.js exist by now.
'use strict';

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

// ---------- views ----------

// Shows view NAME (camera | wall | locks | admin); what the others play stops.
function showView(name) {
  if (state.view === 'wall' && name !== 'wall') stopWall();
  if (state.view === 'camera' && name !== 'camera') stopPlayer();
  state.view = name;
  for (const b of document.querySelectorAll('nav.views button')) b.setAttribute('aria-pressed', String(b.dataset.view === name));
  for (const v of ['camera', 'wall', 'locks', 'admin']) $('view-' + v).hidden = v !== name;
  if (name === 'wall') enterWall();
  if (name === 'locks') loadLocks().catch((e) => lockError(e.message));
  if (name === 'admin') loadAdmin().catch((e) => adminError(e.message));
}

for (const b of document.querySelectorAll('nav.views button')) b.addEventListener('click', () => showView(b.dataset.view));

// ---------- start ----------

function showError(e) {
  if (e && e.status === 401) return;
  setStatus(String(e && e.message ? e.message : e), true);
}

let timers = [];

async function refresh() {
  try {
    await loadGroups();
    await loadCameras();
    if (state.camera && state.view === 'camera') await loadTimeline();
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
  await probeAdmin().catch(showError);
  await refresh();
  const want = hash.get('camera') || (state.cameras[0] && state.cameras[0].name);
  if (want && !state.camera) {
    if (hash.get('span')) $('span').value = hash.get('span');
    await selectCamera(want).catch(showError);
  }
  if (hash.get('group')) {
    const g = state.groups.find((x) => x.name === hash.get('group'));
    if (g) { $('group-filter').value = String(g.id); await loadCameras(); }
  }
  if (['wall', 'locks', 'admin'].includes(hash.get('view'))) showView(hash.get('view'));
  timers.push(setInterval(refresh, 5000));
  // An open run grows at the cycle's pace: while the timeline shows now, redraw it every second
  // (one request at a time).
  let growing = false;
  timers.push(setInterval(() => {
    if (growing || !state.camera || state.view !== 'camera' || !showsLiveEdge()) return;
    growing = true;
    loadTimeline().catch(showError).finally(() => { growing = false; });
  }, 1000));
  timers.push(setInterval(() => { if (state.mode !== 'stopped') drawCursor(); }, 500));
  document.body.dataset.ready = '1';
}

state.token = readToken();
if (state.token) start();
else askToken();
