// End-to-end test of the web UI in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core from the build tree's web-deps). It starts a real vigild (embedded PostgreSQL, a
// file volume, the simulated-disk profile), records a test camera twice with a pause in between
// (so the timeline has two runs and a gap), posts an event, then opens /ui/#token=... and checks:
// the timeline shows both runs and the gap (with its reason), hovering shows a thumbnail,
// clicking plays recorded video (the <video>'s currentTime advances), keyframe rewind runs back
// to the start, fast-forward on to the end and rewind back again, clip after clip over the gap
// (the position shown follows, the <video> plays the keyframe clips), ▶ plays normally again,
// the disk panel is filled,
// the event search finds the event and plays it in place; Live plays a running recording. A second
// camera records in real time meanwhile: its timeline shows the open run (the segment being
// written, `"open": true`) growing to now, and a click 20 s before now plays RECORDED video from
// there (HLS VOD of the range from the click, not the live view). Screenshots are left in OUT_DIR:
// ui.png at the end, ui-rewind.png while rewinding, ui-open.png playing from the open run.
// Bounded: everything runs under one 110 s deadline; exit status 0 only if every check passed.
//
// Usage: node ui.e2e.mjs --vigild PATH --vigil PATH --web DIR --deps DIR --out DIR
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

import { CHROMIUM, harness } from './e2e_harness.mjs';

let vigild = null;
let browser = null;
const recorders = [];  // recorders running in the background, stopped at the end
const h = harness({ script: 'ui.e2e.mjs', deadlineMs: 110_000, tmpPrefix: 'vigil-webui-',
  running: () => ({ vigild, browser, recorders }) });
const { args, tmp, log, check, until, run } = h;

async function main() {
  // playwright-core lives in the build tree (deploy/web-deps.sh), not next to this script.
  const require = createRequire(path.join(path.resolve(args.deps), 'package.json'));
  const { chromium } = require('playwright-core');
  check(fs.existsSync(CHROMIUM), `${CHROMIUM} exists (deploy/install-deps.sh installs chromium)`);
  check(fs.existsSync(path.join(args.web, 'index.html')) && fs.existsSync(path.join(args.web, 'hls.min.js')),
    'the built web UI holds index.html and hls.min.js');

  // A 4 s H.264 test clip and the simulated disk's profile.
  const clip = path.join(tmp, 'clip.mp4');
  const longClip = path.join(tmp, 'clip12.mp4');
  const realTimeClip = path.join(tmp, 'clip90.mp4');
  const profile = path.join(tmp, 'wd.json');
  await Promise.all([
    run('/usr/bin/ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '12',
      '-c:v', 'libx264', '-g', '25', '-bf', '0', '-pix_fmt', 'yuv420p', longClip], 'ffmpeg12.log'),
    run('/usr/bin/ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '4',
      '-c:v', 'libx264', '-g', '25', '-bf', '0', '-pix_fmt', 'yuv420p', clip], 'ffmpeg.log'),
    run('/usr/bin/ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '90',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-bf', '0', '-pix_fmt', 'yuv420p', realTimeClip], 'ffmpeg90.log'),
    run(args.vigil, ['profile', 'sim:wd400bb', '--quick', '-o', profile], 'profile.log'),
  ]);
  log('clip and profile ready');

  const data = path.join(tmp, 'data');
  const vlog = fs.openSync(path.join(args.out, 'vigild.log'), 'w');
  vigild = spawn(args.vigild, ['--data', data, '--http-port', '0', '--listen', '127.0.0.1:0',
    '--volume', path.join(tmp, 'vol'), '--volume-size', String(128 << 20), '--extent-bytes', String(4 << 20),
    '--profile', profile, '--cycle-ms', '200', '--model-check-cycles', '0', '--no-camera-pull',
    '--web-root', args.web], { stdio: ['ignore', vlog, vlog] });
  const ep = await until('vigild to listen (DATA/run/endpoints.json)', () => {
    if (vigild.exitCode !== null) throw new Error('vigild exited ' + vigild.exitCode);
    const f = path.join(data, 'run', 'endpoints.json');
    return fs.existsSync(f) && fs.existsSync(path.join(data, 'admin.token')) && JSON.parse(fs.readFileSync(f, 'utf8'));
  }, 40_000);
  const token = fs.readFileSync(path.join(data, 'admin.token'), 'utf8').trim();
  const base = `http://${ep.http}`;
  log('vigild at', base, 'wire', ep.wire);

  // The UI's files are open; the API is not; nothing outside the loaded set is served.
  let r = await fetch(`${base}/ui/`);
  check(r.status === 200 && (r.headers.get('content-type') || '').startsWith('text/html'), 'GET /ui/ without a token: 200 text/html');
  r = await fetch(`${base}/ui/hls.min.js`);
  check(r.status === 200 && (r.headers.get('content-type') || '').startsWith('text/javascript'), 'GET /ui/hls.min.js: 200 text/javascript');
  r = await fetch(`${base}/ui/..%2Fadmin.token`);
  check(r.status === 404, 'a path outside the UI: 404');
  r = await fetch(`${base}/api/v1/cameras`);
  check(r.status === 401, 'the API still needs a token: 401');

  // Two recordings of the camera "yard" with a pause between them: runs, and a gap.
  const env = { VIGIL_TOKEN: token };
  await run(args.vigil, ['--server', ep.wire, 'record', '--stream', 'yard', clip], 'rec1.log', env);
  await new Promise((res) => setTimeout(res, 3000));  // the gap (not a timing assertion)
  await run(args.vigil, ['--server', ep.wire, 'record', '--stream', 'yard', '--gap-reason', 'e2e pause', clip], 'rec2.log', env);
  log('recorded twice');
  const auth = { Authorization: 'Bearer ' + token };
  const tl = await until('the catalog timeline to show 2 runs and a gap', async () => {
    const t = await (await fetch(`${base}/api/v1/cameras/yard/timeline?from=-10m`, { headers: auth })).json();
    return t.runs && t.runs.length === 2 && t.gaps && t.gaps.length >= 1 && !t.recording ? t : null;
  }, 20_000, 200);
  const second = tl.runs[1];
  // The camera "porch" records in real time (not --fast) from now on: by the time the checks of
  // "yard" are done, its open segment holds more than 20 s.
  const porchRec = spawn(args.vigil, ['--server', ep.wire, 'record', '--stream', 'porch', realTimeClip],
    { stdio: ['ignore', fs.openSync(path.join(tmp, 'rec-porch.log'), 'w'), fs.openSync(path.join(tmp, 'rec-porch.err'), 'w')],
      env: { ...process.env, VIGIL_TOKEN: token } });
  recorders.push(porchRec);
  r = await fetch(`${base}/api/v1/events`, {
    method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ camera: 'yard', type: 'motion', object_class: 'person', confidence: 0.9,
      start_us: second.start_us + 1_000_000, end_us: second.start_us + 2_000_000, source: 'ui.e2e' }),
  });
  check(r.status === 201 || r.status === 200, `POST /api/v1/events: ${r.status}`);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--autoplay-policy=no-user-gesture-required'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text() + ' @ ' + (m.location().url || '').replace(/access_token=[^&]*/, 'access_token=…')); });
  page.on('pageerror', (e) => consoleErrors.push('pageerror: ' + e.message));
  const failedResponses = [];
  // (A live playlist asked for before the recording's first segment is a 404 the UI retries.)
  page.on('response', (res) => { if (res.status() >= 400 && !(res.status() === 404 && res.url().includes('/live.m3u8'))) failedResponses.push(`${res.status()} ${res.url().replace(/access_token=[^&]*/, 'access_token=…')}`); });
  await page.goto(`${base}/ui/#token=${encodeURIComponent(token)}&camera=yard&span=fit`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20_000 });
  check(!(await page.evaluate(() => location.hash.includes('token='))), 'the token left the address bar');
  check(await page.evaluate(() => sessionStorage.getItem('vigil.token') !== null), 'the token is kept in sessionStorage');

  // Cameras and timeline.
  await page.waitForSelector('#cameras li[data-camera="yard"]', { timeout: 10_000 });
  await page.waitForFunction(() => document.querySelectorAll('#track .run:not(.recording)').length === 2 &&
    document.querySelectorAll('#track .gap').length >= 1, null, { timeout: 10_000 });
  check(true, 'the timeline shows 2 runs and a gap');
  // Retention: what the camera holds and keeps, and a byte quota set through the API shown.
  await page.waitForFunction(() => /recorded · kept until space is needed/.test(document.getElementById('retention').textContent),
    null, { timeout: 10_000 });
  check(Number(await page.getAttribute('#retention', 'data-recorded-bytes')) > 0, 'the camera\'s recorded bytes are shown');
  const patched = await page.evaluate(async () => {
    const r = await fetch('/api/v1/cameras/' + encodeURIComponent(state.camera), { method: 'PATCH', headers: { Authorization: 'Bearer ' + state.token,
      'Content-Type': 'application/json' }, body: JSON.stringify({ retention_days: 30, retention_bytes: 500e9 }) });
    await loadRetention();
    return r.status;
  });
  check(patched === 200, `retention set through the API (${patched})`);
  const keptText = await page.textContent('#retention');
  check(/kept 30 days, at most 500 GB/.test(keptText), `the quota and age limit are shown ("${keptText}")`);
  const gapTitle = await page.getAttribute('#track .gap', 'title');
  check(/source_lost/.test(gapTitle) && /e2e pause/.test(gapTitle), `the gap names its reason on hover ("${gapTitle}")`);
  const runBox = await page.locator('#track .run:not(.recording)').first().boundingBox();
  const gapBox = await page.locator('#track .gap').first().boundingBox();
  check(runBox.width > 20 && gapBox.width > 5 && gapBox.x >= runBox.x + runBox.width - 2,
    `the run (${runBox.width.toFixed(0)} px) and the gap after it (${gapBox.width.toFixed(0)} px) are drawn`);

  // Scrubbing: hovering the first run shows its thumbnail.
  const cx = runBox.x + runBox.width * 0.5;
  const cy = runBox.y + runBox.height / 2;
  await page.mouse.move(cx - 5, cy);
  await page.mouse.move(cx, cy);
  await page.waitForFunction(() => {
    const img = document.getElementById('hover-img');
    return !document.getElementById('hover').hidden && img.complete && img.naturalWidth > 0 && img.src.includes('thumbnail.jpg');
  }, null, { timeout: 15_000 });
  check(true, 'hovering the timeline shows a thumbnail');

  // Click to play from the middle of the first run: currentTime must advance.
  await page.mouse.down();
  await page.mouse.up();
  const ct = () => page.evaluate(() => document.getElementById('video').currentTime);
  const first = await until('the video to start playing', async () => { const c = await ct(); return c > 0.2 ? c : 0; }, 20_000);
  await until('the video currentTime to advance', async () => (await ct()) > first + 0.5, 10_000);
  check(true, `the video plays (currentTime ${first.toFixed(2)} → ${(await ct()).toFixed(2)})`);
  check((await page.textContent('#mode')) === 'recorded', 'the player says it plays a recording');
  await page.waitForFunction(() => !document.getElementById('cursor').hidden, null, { timeout: 5_000 });
  check(true, 'the timeline cursor follows playback');
  // Speed control.
  await page.selectOption('#speed', '2');
  check((await page.evaluate(() => document.getElementById('video').playbackRate)) === 2, 'speed 2× sets playbackRate');

  // Keyframe rewind and fast-forward: the <video> plays keyframe-only clips (export.mp4?keyframes=1,
  // &reverse=1 backwards) chunk after chunk, and the shown recording position follows. Every
  // timeupdate of a keyframe clip is logged in the page (media time and shown position), so the
  // checks below wait for conditions, whatever this machine's speed. Rewind first: it starts
  // wherever playback has got to, and ends at the start of the
  // recording, from where fast-forward has a known way to go (run, gap, run).
  await page.evaluate(() => {
    window.trickLog = [];
    const v = document.getElementById('video');
    v.addEventListener('timeupdate', () => {
      if (!v.src.includes('keyframes=1')) return;
      window.trickLog.push({ reverse: v.src.includes('reverse=1'), t: v.currentTime, src: v.src,
        pos: Number(document.getElementById('position').dataset.ms || 0) });
    });
  });
  const pos = () => page.evaluate(() => Number(document.getElementById('position').dataset.ms || 0));
  const modeText = () => page.textContent('#mode');
  const runMs = tl.runs.map((x) => ({ start: x.start_us / 1000, end: x.end_us / 1000 }));
  const p0 = await pos();
  // (At least the 0.2 s of playing seen above after the keyframe playback started at.)
  check(p0 > runMs[0].start + 100 && p0 <= runMs[1].end,
    `the position shown is in the recording (${((p0 - runMs[0].start) / 1000).toFixed(2)} s after its start)`);
  await page.selectOption('#trick-rate', '4');
  await page.click('#rew');
  check(/rewind 4×/.test(await modeText()), `the player says it rewinds ("${await modeText()}")`);
  await page.waitForFunction(() => window.trickLog.some((e) => e.reverse && e.t > 0), null, { timeout: 15_000 });
  check(true, 'the video plays a reverse keyframe clip (its currentTime advances)');
  await page.waitForFunction((p) => Number(document.getElementById('position').dataset.ms) < p - 100, p0, { timeout: 15_000 });
  check(true, 'rewind moves the shown position back');
  await page.screenshot({ path: path.join(args.out, 'ui-rewind.png') });  // a second artifact: trick play
  await page.waitForFunction(() => /start of recording/.test(document.getElementById('mode').textContent), null, { timeout: 20_000 });
  const pStart = await pos();
  check(Math.abs(pStart - runMs[0].start) < 50, `rewind stops at the start of the recording (${(pStart - runMs[0].start).toFixed(1)} ms from it)`);
  let logged = await page.evaluate(() => window.trickLog);
  const back = logged.filter((e) => e.reverse);
  check(back.every((e, i) => i === 0 || e.pos <= back[i - 1].pos), `the position only moved back (${back.length} updates)`);
  check(!(await page.locator('#cursor').isHidden()), 'the timeline cursor shows the position reached');

  await page.evaluate(() => { window.trickLog = []; });
  await page.click('#ffwd');
  check(/fast-forward 4×/.test(await modeText()), `the player says it fast-forwards ("${await modeText()}")`);
  await page.waitForFunction(() => window.trickLog.some((e) => !e.reverse && e.t > 0), null, { timeout: 15_000 });
  check(true, 'the video plays a forward keyframe clip (its currentTime advances)');
  await page.waitForFunction((r) => Number(document.getElementById('position').dataset.ms) > r.start, runMs[1], { timeout: 15_000 });
  check(true, 'fast-forward moves the shown position on, over the gap into the second run');
  await page.waitForFunction(() => /end of recording/.test(document.getElementById('mode').textContent), null, { timeout: 20_000 });
  const pEnd = await pos();
  check(Math.abs(pEnd - runMs[1].end) < 50, `fast-forward stops at the end of the recording (${(pEnd - runMs[1].end).toFixed(1)} ms from it)`);
  logged = await page.evaluate(() => window.trickLog);
  check(logged.every((e, i) => !e.reverse && (i === 0 || e.pos >= logged[i - 1].pos)), `the position only moved forward (${logged.length} updates)`);
  check(new Set(logged.map((e) => e.src)).size >= 2 && logged.every((e) => /rate=4/.test(e.src)),
    'the clips were chained (one per run: the gap is skipped), each at 4×');

  // Rewind again, now from the end: the second run, over the gap, the first, to the start.
  await page.evaluate(() => { window.trickLog = []; });
  await page.click('#rew');
  await page.waitForFunction((r) => Number(document.getElementById('position').dataset.ms) < r.end, runMs[0], { timeout: 15_000 });
  check(true, 'rewind from the end moves the position back over the gap into the first run');
  await page.waitForFunction(() => /start of recording/.test(document.getElementById('mode').textContent), null, { timeout: 20_000 });
  check(Math.abs((await pos()) - runMs[0].start) < 50, 'and stops at the start of the recording');
  logged = await page.evaluate(() => window.trickLog);
  check(logged.every((e, i) => e.reverse && (i === 0 || e.pos <= logged[i - 1].pos)) && logged.some((e) => e.t > 0),
    `the reverse clips played and the position only moved back (${logged.length} updates)`);
  check(new Set(logged.map((e) => e.src)).size >= 2, 'the reverse clips were chained (one per run)');

  // ▶: normal playback again, from where rewinding stopped.
  await page.selectOption('#speed', '1');
  await page.click('#play');
  check((await modeText()) === 'recorded', 'after ▶ the player plays the recording normally');
  const n0 = await until('normal playback to start again', async () => { const c = await ct(); return c > 0.2 ? c : 0; }, 20_000);
  await until('its currentTime to advance', async () => (await ct()) > n0 + 0.3, 10_000);
  const pPlay = await pos();
  check(pPlay >= runMs[0].start - 50 && pPlay < runMs[0].end, `▶ plays from the start of the recording (${((pPlay - runMs[0].start) / 1000).toFixed(2)} s in)`);

  // Disk panel from /metrics.
  await page.waitForFunction(() => /admitted streams/.test(document.getElementById('disks').textContent), null, { timeout: 15_000 });
  check(true, 'the disk panel shows admitted streams, utilisation, slack, misses');

  // Event search; the result plays in place.
  await page.fill('#q-type', 'motion');
  await page.click('#search button[type=submit]');
  await page.waitForSelector('#results li.result', { timeout: 10_000 });
  const resultText = await page.textContent('#results li.result');
  check(/motion/.test(resultText) && /person/.test(resultText) && /yard/.test(resultText), 'the search finds the event');
  await page.click('#results li.result button.play');
  const rct = () => page.evaluate(() => { const v = document.querySelector('#results li.result video'); return v ? v.currentTime : 0; });
  await until('the event clip to play in place', async () => (await rct()) > 0.3, 20_000);
  check(true, 'the event clip plays in place');

  await page.click('#results li.result button.play');  // closes the clip again

  // Live view: a third recording runs; once the UI sees the camera recording, Live plays it.
  const liveRec = spawn(args.vigil, ['--server', ep.wire, 'record', '--stream', 'yard', longClip],
    { stdio: ['ignore', fs.openSync(path.join(tmp, 'rec3.log'), 'w'), fs.openSync(path.join(tmp, 'rec3.err'), 'w')],
      env: { ...process.env, VIGIL_TOKEN: token } });
  try {
    await page.waitForSelector('#live:not([disabled])', { timeout: 15_000 });
    check(true, 'the camera shows as recording and Live is offered');
    await page.waitForSelector('#track .run.recording', { timeout: 10_000 });
    check(true, 'the timeline draws the recording in progress up to now');
    await page.click('#live');
    const lct = () => page.evaluate(() => document.getElementById('video').currentTime);
    const l0 = await until('live video to start', async () => { const c = await lct(); return c > 0.2 ? c : 0; }, 15_000);
    await until('live currentTime to advance', async () => (await lct()) > l0 + 0.5, 8_000);
    check((await page.textContent('#mode')) === 'live', `live view plays (currentTime ${l0.toFixed(2)} → ${(await lct()).toFixed(2)})`);
    await page.evaluate(() => document.getElementById('video').pause());
  } finally {
    if (liveRec.exitCode === null) liveRec.kill('SIGINT');
    await until('the live recorder to stop', () => liveRec.exitCode !== null || liveRec.signalCode !== null, 15_000)
      .catch(() => liveRec.kill('SIGKILL'));
  }
  // The open run: "porch" has recorded in real time for a while; its segment is still open.
  const porchTl = await until('porch\'s timeline to show an open run of more than 24 s', async () => {
    const t = await (await fetch(`${base}/api/v1/cameras/porch/timeline?from=-10m`, { headers: auth })).json();
    const open = (t.runs || []).find((x) => x.open);
    return open && open.end_us - open.start_us > 24e6 ? t : null;
  }, 45_000, 500);
  const openRun = porchTl.runs.find((x) => x.open);
  check(porchTl.recording && Date.now() * 1000 - openRun.end_us < 5e6,
    `the timeline API returns the open run ending at the last durable time (${((Date.now() * 1000 - openRun.end_us) / 1e6).toFixed(1)} s before now)`);
  await page.click('#cameras li[data-camera="porch"]');
  await page.waitForSelector('#track .run.open', { timeout: 10_000 });
  await page.waitForSelector('#track .run.live-edge', { timeout: 10_000 });
  check(true, 'the UI draws the open run and its live edge');
  const openEnd = () => page.evaluate(() => Number(document.querySelector('#track .run.open').dataset.end));
  const end0 = await openEnd();
  await until('the open run to grow (redrawn while the view shows now)', async () => (await openEnd()) > end0, 4_500, 100);
  check(true, `the open run grows (its end moved ${(((await openEnd()) - end0) / 1e6).toFixed(1)} s)`);
  check(!(await page.getAttribute('#track .run.open', 'title')).includes('Live') &&
    !(await page.textContent('#track')).includes('not closed'), 'no "not closed yet: use Live" on the open run');
  // Click 20 s before now, on the open run.
  const target = await page.evaluate(() => {
    const t = Date.now() - 20_000;
    const r = document.getElementById('track').getBoundingClientRect();
    return { t, x: r.left + r.width * (t - state.win.from) / (state.win.to - state.win.from), y: r.top + r.height / 2 };
  });
  await page.mouse.move(target.x - 3, target.y);
  await page.mouse.move(target.x, target.y);
  await page.mouse.down();
  await page.mouse.up();
  check((await modeText()) === 'recorded', 'a click on the open run plays the recording (not Live)');
  const src = await page.evaluate(() => (state.hls && state.hls.url) || document.getElementById('video').src);
  check(/\/cameras\/porch\/hls\.m3u8\?/.test(src) && !/live\.m3u8/.test(src),
    `the player's source is the recorded HLS of the range from the click (${src.replace(/access_token=[^&]*/, 'access_token=…').replace(/^.*\/api/, '/api')})`);
  const o0 = await until('recorded video from the open run to start', async () => { const c = await ct(); return c > 0.2 ? c : 0; }, 20_000);
  await until('its currentTime to advance', async () => (await ct()) > o0 + 0.5, 10_000);
  const shown = await until('the position shown', async () => (await pos()) || 0, 5_000);
  // Where playback began: the position shown less what has played since it started (however long
  // this machine made the player take to start; media time may count from the playlist's origin).
  const began = shown - ((await ct()) - o0) * 1000;
  const behind = (Date.now() - shown) / 1000;
  check(Math.abs(began - target.t) < 5_000 && behind > 10,
    `recorded video plays from the click (began ${((began - target.t) / 1000).toFixed(1)} s from it, now ${behind.toFixed(1)} s behind now: not live)`);
  await page.screenshot({ path: path.join(args.out, 'ui-open.png'), fullPage: true });
  await page.evaluate(() => document.getElementById('video').pause());
  porchRec.kill('SIGINT');
  await until('the porch recorder to stop', () => porchRec.exitCode !== null || porchRec.signalCode !== null, 15_000)
    .catch(() => porchRec.kill('SIGKILL'));

  const shot = path.join(args.out, 'ui.png');
  await page.screenshot({ path: shot, fullPage: true });
  log('screenshot:', shot);
  const serious = consoleErrors.filter((e) => !/favicon/.test(e));
  if (serious.length) log('browser console errors:', serious.join(' | '));
  check(!serious.some((e) => /Content Security Policy|pageerror/.test(e)), 'no script error and no Content-Security-Policy violation');
  check(failedResponses.length === 0, `no request of the page failed (${failedResponses.join(', ') || 'none'})`);
}

await h.runMain(main, { failureShot: 'ui-failure.png', vigildLog: 'vigild.log' });
