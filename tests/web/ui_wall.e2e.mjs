// End-to-end test of the web UI's multi-camera and administration views in headless Chromium
// (Debian's /usr/bin/chromium through playwright-core from the build tree's web-deps). A real
// vigild (embedded PostgreSQL, a file volume, the simulated-disk profile) records four cameras,
// cam1…cam4, each `vigil record` of a generated clip in real time, and the test checks real state:
//   - the wall (2×2) shows the four cameras live: every tile's <video> advances (currentTime grows,
//     frames decoded), each on the main stream (none lists a substream; with one listed the tile
//     would ask for stream=sub — checked on the UI's choice, and its timeline row then shows the
//     substream's runs);
//   - a group made in the Admin view (GET /api/v1/groups shows it, in the order ticked) filters the
//     wall: its two cameras fill the first tiles in that order, the rest are empty;
//   - recorded mode: every tile plays the same instant; after a seek on the shared timeline every
//     tile shows, within 0.5 s, the master clock's time, which advances, and keeps doing so; the
//     shared timeline draws each camera's open run; a double-click opens that camera alone,
//     playing the recording there;
//   - Admin: a camera added (name, URL, substream URL, retention days and bytes), edited, disabled
//     and removed, each checked with GET; a refused name shows the API's error verbatim;
//   - a range dragged on a camera's timeline is locked ("Lock selection", a reason): GET
//     /api/v1/locks has it active; Release in the Locks view: it is released (GET ?all=true);
//   - Export MP4 of that range downloads with progress (bytes and % of Content-Length, the network
//     throttled meanwhile so progress can be seen), a second export is cancelled, and the saved file
//     is exactly Content-Length bytes.
// Screenshots in OUT_DIR: wall-2x2.png (live wall), wall-group.png (wall filtered by a group),
// wall-recorded.png (recorded mode in sync), admin.png, locks.png, export-progress.png; on failure
// ui-wall-failure.png. Bounded by one 170 s deadline; exit status 0 only if every check passed.
//
// Usage: node ui_wall.e2e.mjs --vigild PATH --vigil PATH --web DIR --deps DIR --out DIR
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

import { CHROMIUM, harness } from './e2e_harness.mjs';

const CAMERAS = ['cam1', 'cam2', 'cam3', 'cam4'];
let vigild = null;
let browser = null;
const recorders = [];  // recorders running in the background, stopped at the end
const h = harness({ script: 'ui_wall.e2e.mjs', deadlineMs: 170_000, tmpPrefix: 'vigil-webwall-',
  running: () => ({ vigild, browser, recorders }) });
const { args, tmp, log, check, until, run } = h;

async function main() {
  const require = createRequire(path.join(path.resolve(args.deps), 'package.json'));
  const { chromium } = require('playwright-core');
  check(fs.existsSync(CHROMIUM), `${CHROMIUM} exists`);

  // A 3 min clip (recorded in real time: longer than the test) and the simulated disk's profile.
  const clip = path.join(tmp, 'clip.mp4');
  const profile = path.join(tmp, 'wd.json');
  await Promise.all([
    run('/usr/bin/ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '180',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-bf', '0', '-pix_fmt', 'yuv420p', clip], 'ffmpeg.log'),
    run(args.vigil, ['profile', 'sim:wd400bb', '--quick', '-o', profile], 'profile.log'),
  ]);
  log('clip and profile ready');

  const data = path.join(tmp, 'data');
  const vlog = fs.openSync(path.join(args.out, 'vigild-wall.log'), 'w');
  vigild = spawn(args.vigild, ['--data', data, '--http-port', '0', '--listen', '127.0.0.1:0',
    '--volume', path.join(tmp, 'vol'), '--volume-size', String(256 << 20), '--extent-bytes', String(4 << 20),
    '--profile', profile, '--cycle-ms', '200', '--model-check-cycles', '0', '--no-camera-pull',
    '--web-root', args.web], { stdio: ['ignore', vlog, vlog] });
  const ep = await until('vigild to listen', () => {
    if (vigild.exitCode !== null) throw new Error('vigild exited ' + vigild.exitCode);
    const f = path.join(data, 'run', 'endpoints.json');
    return fs.existsSync(f) && fs.existsSync(path.join(data, 'admin.token')) && JSON.parse(fs.readFileSync(f, 'utf8'));
  }, 40_000);
  const token = fs.readFileSync(path.join(data, 'admin.token'), 'utf8').trim();
  const base = `http://${ep.http}`;
  const auth = { Authorization: 'Bearer ' + token };
  const get = async (p) => { const r = await fetch(base + p, { headers: auth }); return { status: r.status, body: await r.json() }; };
  log('vigild at', base);

  for (const cam of CAMERAS) {
    const p = spawn(args.vigil, ['--server', ep.wire, 'record', '--stream', cam, clip],
      { stdio: ['ignore', fs.openSync(path.join(tmp, `rec-${cam}.log`), 'w'), fs.openSync(path.join(tmp, `rec-${cam}.err`), 'w')],
        env: { ...process.env, VIGIL_TOKEN: token } });
    recorders.push(p);
  }
  await until('all four cameras to record', async () => {
    const c = await get('/api/v1/cameras');
    return CAMERAS.every((n) => c.body.cameras.some((x) => x.name === n && x.state === 'recording'));
  }, 20_000, 250);
  log('four cameras recording');

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--autoplay-policy=no-user-gesture-required'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error' && /Content Security Policy/.test(m.text())) pageErrors.push(m.text()); });
  page.on('dialog', (d) => d.accept());  // Remove and Release ask for a confirmation
  await page.goto(`${base}/ui/#token=${encodeURIComponent(token)}&view=wall`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20_000 });

  // ---- live wall, 2×2 ----
  const tiles = () => page.evaluate(() => [...document.querySelectorAll('#wall .tile')].map((el) => {
    const v = el.querySelector('video');
    const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : { totalVideoFrames: 0 };
    return { camera: el.dataset.camera, stream: el.dataset.stream, state: el.dataset.state, t: v.currentTime,
      frames: q.totalVideoFrames, drift: el.dataset.driftMs === undefined || el.dataset.driftMs === '' ? null : Number(el.dataset.driftMs),
      ms: Number(el.dataset.ms || 0) };
  }));
  await page.waitForFunction(() => document.querySelectorAll('#wall .tile').length === 4, null, { timeout: 10_000 });
  let tl = await tiles();
  check(JSON.stringify(tl.map((x) => x.camera)) === JSON.stringify(CAMERAS), `the 2×2 wall holds the four cameras (${tl.map((x) => x.camera).join(', ')})`);
  check(tl.every((x) => x.stream === 'main'), 'cameras without a substream play their main stream');
  const first = await until('every live tile to play', async () => { const t = await tiles(); return t.every((x) => x.t > 0.3) ? t : null; }, 40_000, 250);
  await until('every live tile to advance', async () => {
    const t = await tiles();
    return t.every((x, i) => x.t > first[i].t + 0.5 && x.frames > first[i].frames);
  }, 15_000, 250);
  tl = await tiles();
  check(true, `all four live tiles advance (currentTime ${first.map((x) => x.t.toFixed(1)).join('/')} → ${tl.map((x) => x.t.toFixed(1)).join('/')}, frames ${tl.map((x) => x.frames).join('/')})`);
  await page.screenshot({ path: path.join(args.out, 'wall-2x2.png') });
  // The substream choice: a camera listing a stream of role "sub" is asked for with stream=sub.
  const choice = await page.evaluate(() => {
    state.details.set('fake', { at: Date.now(), body: { streams: [{ role: 'main' }, { role: 'sub' }] } });
    const withSub = streamParams('fake');
    return { withSub, without: streamParams('cam1') };
  });
  check(choice.withSub.stream === 'sub' && !choice.without.stream, 'stream=sub only for a camera that lists a substream');
  // ... and the wall's timeline row of such a tile shows the substream's runs, not the main stream's.
  const rows = await page.evaluate(() => {
    const main = [{ start_us: 1e15, end_us: 1e15 + 9e6 }];
    const sub = [{ start_us: 1e15 + 3e6, end_us: 1e15 + 9e6 }];
    wall.timelines.set('fake', { camera: 'fake', runs: main, substream: { runs: sub } });
    wall.timelines.set('nosub', { camera: 'nosub', runs: main });
    const got = { fake: tileRuns('fake'), nosub: tileRuns('nosub') };
    wall.timelines.delete('fake');
    wall.timelines.delete('nosub');
    return got;
  });
  check(rows.fake.length === 1 && rows.fake[0].start_us === 1e15 + 3e6 && rows.nosub[0].start_us === 1e15,
    `a substream tile's timeline row shows the substream's runs (${JSON.stringify(rows)})`);

  // ---- a group, made in the Admin view, filters the wall ----
  await page.click('nav.views [data-view="admin"]');
  await page.waitForSelector('#admin-cameras tbody tr[data-camera="cam4"]', { timeout: 10_000 });
  await page.fill('#group-name', 'Pair');
  await page.check('#group-members input[value="cam3"]');
  await page.check('#group-members input[value="cam1"]');
  await page.click('#group-save');
  await page.waitForSelector('#admin-groups tr[data-group="Pair"]', { timeout: 10_000 });
  const groups = (await get('/api/v1/groups')).body.groups;
  check(groups.length === 1 && groups[0].name === 'Pair' && JSON.stringify(groups[0].cameras) === '["cam3","cam1"]',
    `the group is in GET /api/v1/groups, in the order ticked (${JSON.stringify(groups)})`);
  await page.click('nav.views [data-view="wall"]');
  await page.selectOption('#group-filter', String(groups[0].id));
  await page.waitForFunction(() => [...document.querySelectorAll('#wall .tile')].map((t) => t.dataset.camera).join(',') === 'cam3,cam1,,',
    null, { timeout: 10_000 });
  check(true, 'the group fills the wall: cam3, cam1, then empty tiles');
  const listed = await page.$$eval('#cameras li[data-camera]', (li) => li.map((x) => x.dataset.camera));
  check(JSON.stringify(listed) === '["cam3","cam1"]', `the camera list shows the group's cameras (${listed})`);
  await until('the group\'s tiles to play', async () => { const t = await tiles(); return t[0].t > 0.3 && t[1].t > 0.3; }, 30_000, 250);
  await page.screenshot({ path: path.join(args.out, 'wall-group.png') });
  await page.selectOption('#group-filter', '');
  await page.waitForFunction(() => [...document.querySelectorAll('#wall .tile')].map((t) => t.dataset.camera).join(',') === 'cam1,cam2,cam3,cam4',
    null, { timeout: 10_000 });

  // ---- recorded mode: one clock, tiles in sync after a seek ----
  // Enough recorded before the instant sought: wait until every camera holds 25 s.
  await until('25 s recorded on every camera', async () => {
    const all = await Promise.all(CAMERAS.map((c) => get(`/api/v1/cameras/${c}/timeline?from=-10m`)));
    return all.every((x) => (x.body.runs || []).some((r) => r.open && r.end_us - r.start_us > 25e6));
  }, 45_000, 500);
  await page.click('#wall-recorded');
  await page.waitForFunction(() => document.querySelectorAll('#wall-rows .row .run.open').length === 4, null, { timeout: 10_000 });
  check(true, 'the shared timeline draws every camera\'s open run');
  // Seek: a click on the shared timeline 15 s before now.
  const target = await page.evaluate(() => {
    const t = Date.now() - 15_000;
    const r = document.getElementById('wall-rows').getBoundingClientRect();
    return { t, x: r.left + r.width * (t - wall.win.from) / (wall.win.to - wall.win.from), y: r.top + r.height / 2 };
  });
  await page.mouse.click(target.x, target.y);
  const inSync = (t) => t.every((x) => x.drift !== null && Math.abs(x.drift) < 500 && x.t > 0);
  await until('every recorded tile to play within 0.5 s of the master clock', async () => inSync(await tiles()), 30_000, 250);
  const clock = () => page.evaluate(() => Number(document.getElementById('wall-clock').dataset.ms));
  const c0 = await clock();
  check(Math.abs(c0 - target.t) < 8_000, `the master clock starts at the instant sought (${((c0 - target.t) / 1000).toFixed(1)} s from it)`);
  // In sync and advancing, sampled for 3 s.
  const samples = [];
  for (let i = 0; i < 4; i++) {
    const t = await tiles();
    samples.push(t);
    check(inSync(t), `sample ${i}: every tile within 0.5 s of the clock (drifts ${t.map((x) => x.drift).join('/')} ms)`);
    if (i < 3) await new Promise((r) => setTimeout(r, 1000));  // the spacing of the samples, not a wait for state
  }
  const c1 = await clock();
  check(c1 > c0 + 1500, `the master clock advances (${((c1 - c0) / 1000).toFixed(1)} s)`);
  check(samples[3].every((x, i) => x.ms > samples[0][i].ms + 1500), 'every tile\'s shown time advances with it');
  check(samples[3].every((x) => Math.abs(x.ms - c1) < 2_000 && x.ms < Date.now() - 5_000), 'the tiles show the recording, not live');
  await page.screenshot({ path: path.join(args.out, 'wall-recorded.png') });
  // Double-click a tile: that camera alone, playing the recording there.
  await page.dblclick('#wall .tile[data-camera="cam2"] video');
  await page.waitForFunction(() => !document.getElementById('view-camera').hidden && document.getElementById('camera-title').textContent === 'cam2',
    null, { timeout: 10_000 });
  await page.waitForFunction(() => document.getElementById('mode').textContent === 'recorded', null, { timeout: 10_000 });
  check(true, 'a double-click opens the tile\'s camera alone, playing the recording');

  // ---- Admin: add, edit, disable, remove ----
  await page.click('nav.views [data-view="admin"]');
  await page.waitForSelector('#admin-cameras tbody tr[data-camera="cam1"]', { timeout: 10_000 });
  await page.fill('#cam-name', 'bad name');
  await page.click('#cam-save');
  const refused = await fetch(base + '/api/v1/cameras', { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'bad name', enabled: true }) });
  const refusedText = (await refused.json()).error;
  await page.waitForFunction((t) => document.getElementById('admin-error').textContent === t, refusedText, { timeout: 5_000 });
  check(refused.status === 400, `a refused name shows the API's error verbatim ("${refusedText}")`);
  await page.fill('#cam-name', 'door');
  await page.fill('#cam-url', 'rtsp://10.0.0.5/main');
  await page.fill('#cam-sub', 'rtsp://10.0.0.5/sub');
  await page.fill('#cam-days', '7');
  await page.fill('#cam-bytes', String(2 ** 30));
  await page.click('#cam-save');
  await page.waitForSelector('#admin-cameras tbody tr[data-camera="door"]', { timeout: 10_000 });
  let door = await get('/api/v1/cameras/door');
  check(door.status === 200 && door.body.url === 'rtsp://10.0.0.5/main' && door.body.substream_url === 'rtsp://10.0.0.5/sub' &&
    door.body.retention_days === 7 && door.body.retention_bytes === 2 ** 30 && door.body.enabled === true,
  `Add: GET shows the camera as entered (${JSON.stringify({ url: door.body.url, sub: door.body.substream_url, days: door.body.retention_days, bytes: door.body.retention_bytes })})`);
  await page.click('#admin-cameras tr[data-camera="door"] button.edit');
  await page.fill('#cam-days', '14');
  await page.fill('#cam-bytes', '');
  await page.click('#cam-save');
  await until('the edit to be saved', async () => (await get('/api/v1/cameras/door')).body.retention_days === 14, 10_000, 200);
  door = await get('/api/v1/cameras/door');
  check(door.body.retention_bytes === null && door.body.url === 'rtsp://10.0.0.5/main', 'Edit: 14 days, no byte quota, the URL kept');
  await page.waitForSelector('#admin-cameras tr[data-camera="door"][data-enabled="true"]', { timeout: 10_000 });
  await page.screenshot({ path: path.join(args.out, 'admin.png'), fullPage: true });
  await page.click('#admin-cameras tr[data-camera="door"] button.toggle');
  await page.waitForSelector('#admin-cameras tr[data-camera="door"][data-enabled="false"]', { timeout: 10_000 });
  check((await get('/api/v1/cameras/door')).body.enabled === false, 'Disable: GET shows enabled false');
  await page.click('#admin-cameras tr[data-camera="door"] button.remove');
  await page.waitForFunction(() => !document.querySelector('#admin-cameras tr[data-camera="door"]'), null, { timeout: 10_000 });
  check((await get('/api/v1/cameras/door')).status === 404, 'Remove (confirmed): the camera without recordings is gone (404)');
  check(/door: deleted/.test(await page.textContent('#admin-note')), 'the UI says it was deleted');

  // ---- a lock from a timeline selection; released in the Locks view ----
  await page.click('nav.views [data-view="camera"]');
  await page.selectOption('#span', '300');
  await page.click('#cameras li[data-camera="cam2"]');
  await page.waitForFunction(() => state.win.to - state.win.from < 400e3 && document.querySelector('#track .run.open'), null, { timeout: 10_000 });
  const sel = await page.evaluate(() => {
    const r = document.getElementById('track').getBoundingClientRect();
    const x = (t) => r.left + r.width * (t - state.win.from) / (state.win.to - state.win.from);
    const now = Date.now();
    return { x0: x(now - 20_000), x1: x(now - 8_000), y: r.top + r.height / 2 };
  });
  await page.mouse.move(sel.x0, sel.y);
  await page.mouse.down();
  await page.mouse.move((sel.x0 + sel.x1) / 2, sel.y);
  await page.mouse.move(sel.x1, sel.y);
  await page.mouse.up();
  const range = await page.evaluate(() => state.selection);
  check(range && range.to - range.from > 8_000, `a range is selected on the timeline (${range && ((range.to - range.from) / 1000).toFixed(1)} s)`);
  await page.click('#lock-selection');
  await page.waitForFunction(() => !document.getElementById('view-locks').hidden, null, { timeout: 5_000 });
  await page.fill('#lock-reason', 'case 42: e2e');
  await page.click('#lock-form button[type=submit]');
  await page.waitForSelector('#locks tbody tr[data-active="true"]', { timeout: 10_000 });
  let locks = (await get('/api/v1/locks')).body.locks;
  check(locks.length >= 1 && locks.every((l) => l.camera === 'cam2' && l.reason === 'case 42: e2e' && l.active) &&
    Math.abs(locks[0].from_us / 1000 - range.from) < 1 && Math.abs(locks[0].to_us / 1000 - range.to) < 1,
  `GET /api/v1/locks has the lock of the selection (${locks.length} row(s), ${((locks[0].to_us - locks[0].from_us) / 1e6).toFixed(1)} s)`);
  await page.screenshot({ path: path.join(args.out, 'locks.png'), fullPage: true });
  const lockIds = locks.map((l) => l.id);
  for (const id of lockIds) {
    await page.click(`#locks tr[data-id="${id}"] button.release`);
    await page.waitForSelector(`#locks tr[data-id="${id}"] button.release`, { state: 'detached', timeout: 10_000 });
  }
  check((await get('/api/v1/locks')).body.locks.length === 0, 'Release: no active lock is left');
  locks = (await get('/api/v1/locks?all=true')).body.locks;
  check(lockIds.every((id) => locks.some((l) => l.id === id && !l.active && l.unlocked_at_us)), 'GET ?all=true shows them released');
  await page.check('#lock-all');
  await page.waitForSelector('#locks tbody tr[data-active="false"]', { timeout: 5_000 });
  check(true, 'the toggle shows released locks');

  // ---- export with progress, one cancelled ----
  await page.click('nav.views [data-view="camera"]');
  await page.waitForSelector('#track .run.open', { timeout: 10_000 });
  await page.evaluate((r) => playRecorded(r.from, r.to), range);
  await page.waitForSelector('#export:not([hidden])', { timeout: 5_000 });
  // (The player's own loading would share the throttled network with the exports.)
  await page.evaluate(() => { if (state.hls) state.hls.stopLoad(); document.getElementById('video').pause(); });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: 64 * 1024, uploadThroughput: -1 });
  const download = page.waitForEvent('download', { timeout: 90_000 }).catch((e) => e);
  await page.click('#export');
  const job = page.locator('#exports li.export').first();
  await page.waitForFunction(() => {
    const li = document.querySelector('#exports li.export');
    return li && Number(li.dataset.total) > 0 && Number(li.dataset.bytes) > 0 && Number(li.dataset.bytes) < Number(li.dataset.total);
  }, null, { timeout: 20_000 });
  const midText = await job.locator('.bytes').textContent();
  check(/ of .* \(\d+ %\)/.test(midText), `the export shows its progress ("${midText}")`);
  await page.screenshot({ path: path.join(args.out, 'export-progress.png'), fullPage: true });
  await page.click('#export');  // a second one, cancelled
  await page.waitForFunction(() => document.querySelectorAll('#exports li.export').length === 2 && Number(document.querySelector('#exports li.export').dataset.bytes) > 0,
    null, { timeout: 20_000 });
  await page.click('#exports li.export:first-child button');
  await page.waitForFunction(() => document.querySelector('#exports li.export').dataset.state === 'cancelled', null, { timeout: 5_000 });
  check(true, 'Cancel stops the second export');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await page.waitForFunction(() => document.querySelector('#exports li.export:last-child').dataset.state === 'done', null, { timeout: 60_000 });
  const done = await page.evaluate(() => { const li = document.querySelector('#exports li.export:last-child'); return { bytes: Number(li.dataset.bytes), total: Number(li.dataset.total) }; });
  const saved = path.join(args.out, 'export.mp4');
  const dl = await download;
  if (dl instanceof Error) throw dl;
  check(dl.suggestedFilename().startsWith('cam2-') && dl.suggestedFilename().endsWith('.mp4'), `the export is saved as ${dl.suggestedFilename()}`);
  await dl.saveAs(saved);
  const size = fs.statSync(saved).size;
  check(done.total > 0 && size === done.total && done.bytes === done.total, `the saved file is exactly Content-Length bytes (${size} = ${done.total})`);
  fs.rmSync(saved);

  check(pageErrors.length === 0, `no script error and no Content-Security-Policy violation (${pageErrors.join(' | ') || 'none'})`);
}

await h.runMain(main, { failureShot: 'ui-wall-failure.png', vigildLog: 'vigild-wall.log' });
