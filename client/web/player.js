// Vigil web UI: the player — recorded ranges and live view over HLS, and keyframe fast-forward
// and rewind as chains of keyframe-only MP4 clips. Loaded after timeline.js (index.html).
'use strict';

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

// FROM_START: play from the playlist's first segment. A recorded range that reaches the open
// segment is an EVENT playlist, which hls.js would otherwise start near its end, as if live: the
// operator asked for the moment clicked, not for a few seconds before now.
function attach(video, url, onFatal, fromStart = false) {
  if (window.Hls && Hls.isSupported()) {
    const config = { enableWorker: true, lowLatencyMode: false, backBufferLength: 60 };
    if (fromStart) config.startPosition = 0;
    const hls = new Hls(config);
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
  state.hls = attach(v, url, playerError, true);
  v.playbackRate = Number($('speed').value);
  v.play().catch(() => {});
  setMode('recorded');
  state.range = { from: start, to: end };
  $('export').hidden = false;
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
// Export MP4: the range playing, downloaded with progress (exports.js).
$('export').addEventListener('click', () => { if (state.range) startExport(state.camera, state.range.from, state.range.to); });
// (A keyframe clip keeps playbackRate 1: its rate is the trick-play rate.)
$('speed').addEventListener('change', () => { if (state.mode !== 'trick') $('video').playbackRate = Number($('speed').value); });
$('back10').addEventListener('click', () => { const v = $('video'); v.currentTime = Math.max(0, v.currentTime - 10); });
$('fwd10').addEventListener('click', () => { const v = $('video'); v.currentTime += 10; });
// Mute / unmute: the camera's audio rides in the HLS rendition (AAC; docs/media.md, "Audio"). The
// video starts muted (browsers autoplay only muted media); the button and the native controls agree.
function showSound() {
  const v = $('video');
  $('sound').textContent = v.muted ? '\u{1F507} sound off' : '\u{1F50A} sound on';
  $('sound').setAttribute('aria-pressed', String(!v.muted));
}
$('sound').addEventListener('click', () => { const v = $('video'); v.muted = !v.muted; showSound(); });
// What the selected camera's audio is (its newest audio stream in DETAILS, GET /api/v1/cameras/{name}):
// AAC plays in HLS, its rate and channels on the button's title; G.711 and Opus stay out of HLS,
// so the button is off for them and for a camera without audio.
function showCameraAudio(details) {
  const audio = ((details && details.streams) || []).find((s) => s.media_kind === 'audio');
  const b = $('sound');
  b.disabled = !audio || audio.codec !== 'aac';
  b.dataset.codec = audio ? audio.codec : '';
  if (!audio) b.title = 'This camera records no audio';
  else if (audio.codec !== 'aac') b.title = `This camera's audio (${audio.codec}) is recorded but not in HLS: export it with vigil play --audio`;
  else b.title = `The camera's audio: AAC${audio.sample_rate_hz ? ' ' + audio.sample_rate_hz / 1000 + ' kHz' : ''}` +
    `${audio.channels ? ', ' + (audio.channels === 1 ? 'mono' : audio.channels + ' channels') : ''} (starts muted)`;
}
$('video').addEventListener('volumechange', showSound);

