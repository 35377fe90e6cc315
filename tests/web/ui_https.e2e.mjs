// The web UI over HTTPS in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core
// from the build tree's web-deps). A real vigild serves its HTTP API, the UI and HLS with
// --http-tls-cert/--http-tls-key (a fresh self-signed certificate for 127.0.0.1); a camera is
// recorded; Chromium, told to trust exactly that certificate's public key
// (--ignore-certificate-errors-spki-list, nothing else), opens https://…/ui/, lists the camera,
// draws its run on the timeline, shows a thumbnail on hover and plays the recording (HLS with the
// token in the URL, over HTTPS: the <video>'s currentTime advances), with no failed request and no
// mixed content. A Chromium that is not told to trust the certificate gets
// ERR_CERT_AUTHORITY_INVALID, and plain HTTP to the HTTPS port gets no page.
// Bounded: one 90 s deadline; exit status 0 only if every check passed.
//
// Usage: node ui_https.e2e.mjs --vigild PATH --vigil PATH --web DIR --deps DIR --out DIR
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['vigild', 'vigil', 'web', 'deps', 'out']) {
  if (!args[k]) { console.error(`usage: node ui_https.e2e.mjs --vigild P --vigil P --web DIR --deps DIR --out DIR (missing --${k})`); process.exit(2); }
}
const CHROMIUM = process.env.VIGIL_CHROMIUM || '/usr/bin/chromium';
const DEADLINE_MS = 90_000;
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

fs.mkdirSync(args.out, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-webui-https-'));
fs.chmodSync(tmp, 0o755);  // the embedded PostgreSQL runs as another user when we are root
let vigild = null;
const browsers = [];
let failed = false;

function cleanup() {
  if (vigild && vigild.exitCode === null) vigild.kill('SIGTERM');
}
const hardStop = setTimeout(() => {
  console.error(`FAIL: the test did not finish within ${DEADLINE_MS / 1000} s`);
  failed = true;
  cleanup();
  for (const b of browsers) b.close().catch(() => {});
  setTimeout(() => process.exit(1), 5000).unref();
}, DEADLINE_MS);

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
  log('ok:', what);
}

async function until(what, fn, ms = 20_000, every = 100) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, every));
  }
  throw new Error(`timed out (${ms / 1000} s) waiting for ${what}${last instanceof Error ? ': ' + last.message : ''}`);
}

function run(program, argv, logName) {
  return new Promise((resolve, reject) => {
    const out = fs.openSync(path.join(tmp, logName), 'w');
    const p = spawn(program, argv, { stdio: ['ignore', out, out] });
    p.on('error', reject);
    p.on('exit', (code, sig) => {
      fs.closeSync(out);
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(program)} ${argv.slice(0, 4).join(' ')} exited ${code ?? sig}:\n` +
        fs.readFileSync(path.join(tmp, logName), 'utf8').slice(-2000)));
    });
  });
}

// GET URL over HTTPS trusting CA only (Node's fetch cannot be given a CA per request).
function get(url, ca, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, headers, timeout: 10_000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

async function main() {
  const require = createRequire(path.join(path.resolve(args.deps), 'package.json'));
  const { chromium } = require('playwright-core');
  check(fs.existsSync(CHROMIUM), `${CHROMIUM} exists (deploy/install-deps.sh installs chromium)`);

  const cert = path.join(tmp, 'vigild.crt');
  const key = path.join(tmp, 'vigild.key');
  const clip = path.join(tmp, 'clip.mp4');
  const profile = path.join(tmp, 'wd.json');
  await Promise.all([
    run('/usr/bin/openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=vigild-ui-test',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert], 'openssl.log'),
    run('/usr/bin/ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '6',
      '-c:v', 'libx264', '-g', '25', '-bf', '0', '-pix_fmt', 'yuv420p', clip], 'ffmpeg.log'),
    run(args.vigil, ['profile', 'sim:wd400bb', '--quick', '-o', profile], 'profile.log'),
  ]);
  const ca = fs.readFileSync(cert);
  // What Chromium is told to trust: this certificate's public key (SHA-256 of its SPKI, base64).
  const spki = crypto.createHash('sha256')
    .update(new crypto.X509Certificate(ca).publicKey.export({ type: 'spki', format: 'der' })).digest('base64');

  const data = path.join(tmp, 'data');
  const vlog = fs.openSync(path.join(args.out, 'vigild-https.log'), 'w');
  vigild = spawn(args.vigild, ['--data', data, '--http-port', '0', '--listen', '127.0.0.1:0',
    '--volume', path.join(tmp, 'vol'), '--volume-size', String(128 << 20), '--extent-bytes', String(4 << 20),
    '--profile', profile, '--cycle-ms', '200', '--model-check-cycles', '0', '--no-camera-pull',
    '--web-root', args.web, '--http-tls-cert', cert, '--http-tls-key', key], { stdio: ['ignore', vlog, vlog] });
  const ep = await until('vigild to listen (DATA/run/endpoints.json)', () => {
    if (vigild.exitCode !== null) throw new Error('vigild exited ' + vigild.exitCode);
    const f = path.join(data, 'run', 'endpoints.json');
    return fs.existsSync(f) && fs.existsSync(path.join(data, 'admin.token')) && JSON.parse(fs.readFileSync(f, 'utf8'));
  }, 40_000);
  check(ep.http_tls === true, 'endpoints.json says the HTTP port speaks HTTPS');
  const token = fs.readFileSync(path.join(data, 'admin.token'), 'utf8').trim();
  const base = `https://${ep.http}`;
  log('vigild at', base);

  let r = await get(`${base}/ui/`, ca);
  check(r.status === 200 && r.body.includes('<'), 'GET /ui/ over HTTPS, verified against the certificate: 200');
  const untrusted = await get(`${base}/ui/`, undefined).then(() => 'answered', (e) => e.message);
  check(/self.signed|unable to verify|certificate/i.test(untrusted),
    `the same request trusting only the system's CAs is refused (${untrusted})`);

  await run(args.vigil, ['--server', ep.wire, '--token', token, 'record', '--stream', 'yard', clip, '--fast'], 'rec.log');
  const auth = { Authorization: 'Bearer ' + token };
  await until('the recording to be closed in the catalog', async () => {
    const t = JSON.parse((await get(`${base}/api/v1/cameras/yard/timeline?from=-10m`, ca, auth)).body);
    return t.runs && t.runs.length === 1 && !t.recording;
  }, 20_000, 200);

  // A browser that was not told to trust the certificate: no page.
  const untrusting = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  browsers.push(untrusting);
  const refused = await (await untrusting.newPage()).goto(`${base}/ui/`).then(() => '', (e) => e.message);
  check(/ERR_CERT_AUTHORITY_INVALID/.test(refused), `Chromium without the certificate refuses the page (${refused.split('\n')[0]})`);
  const plain = await (await untrusting.newPage()).goto(`http://${ep.http}/ui/`).then((res) => (res ? res.status() : 0), (e) => e.message);
  check(typeof plain === 'string', `plain HTTP to the HTTPS port gets no page (${String(plain).split('\n')[0]})`);
  await untrusting.close();

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--autoplay-policy=no-user-gesture-required', `--ignore-certificate-errors-spki-list=${spki}`],
  });
  browsers.push(browser);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push('pageerror: ' + e.message));
  const failedResponses = [];
  const insecure = [];
  page.on('request', (q) => { if (!q.url().startsWith('https://') && !q.url().startsWith('blob:') && !q.url().startsWith('data:')) insecure.push(q.url()); });
  page.on('response', (res) => { if (res.status() >= 400) failedResponses.push(`${res.status()} ${res.url().replace(/access_token=[^&]*/, 'access_token=…')}`); });
  await page.goto(`${base}/ui/#token=${encodeURIComponent(token)}&camera=yard&span=fit`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20_000 });
  check(await page.evaluate(() => location.protocol === 'https:' && window.isSecureContext), 'the UI runs in a secure context over HTTPS');
  await page.waitForSelector('#cameras li[data-camera="yard"]', { timeout: 10_000 });
  await page.waitForFunction(() => document.querySelectorAll('#track .run:not(.recording)').length === 1, null, { timeout: 10_000 });
  check(true, 'the camera is listed and its run drawn');

  const runBox = await page.locator('#track .run:not(.recording)').first().boundingBox();
  const cx = runBox.x + runBox.width * 0.5;
  const cy = runBox.y + runBox.height / 2;
  await page.mouse.move(cx - 5, cy);
  await page.mouse.move(cx, cy);
  await page.waitForFunction(() => {
    const img = document.getElementById('hover-img');
    return !document.getElementById('hover').hidden && img.complete && img.naturalWidth > 0 && img.src.startsWith('https://');
  }, null, { timeout: 15_000 });
  check(true, 'hovering the timeline shows a thumbnail fetched over HTTPS');

  await page.mouse.down();
  await page.mouse.up();
  const ct = () => page.evaluate(() => document.getElementById('video').currentTime);
  const first = await until('the video to start playing', async () => { const c = await ct(); return c > 0.2 ? c : 0; }, 20_000);
  await until('the video currentTime to advance', async () => (await ct()) > first + 0.5, 10_000);
  check(true, `the recording plays over HTTPS (currentTime ${first.toFixed(2)} → ${(await ct()).toFixed(2)})`);
  const src = await page.evaluate(() => (state.hls && state.hls.url) || document.getElementById('video').src);
  check(/^https:\/\/.*\/hls\.m3u8\?/.test(src) || /export\.mp4/.test(src), `the player's source is vigild over HTTPS (${src.replace(/access_token=[^&]*/, 'access_token=…').replace(/\?.*$/, '?…')})`);
  await page.screenshot({ path: path.join(args.out, 'ui-https.png'), fullPage: true });

  const serious = consoleErrors.filter((e) => !/favicon/.test(e));
  if (serious.length) log('browser console errors:', serious.join(' | '));
  check(!serious.some((e) => /Mixed Content|Content Security Policy|pageerror|ERR_CERT/.test(e)), 'no script, certificate or mixed-content error');
  check(insecure.length === 0, `every request of the page went over HTTPS (${insecure.join(', ') || 'none other'})`);
  check(failedResponses.length === 0, `no request of the page failed (${failedResponses.join(', ') || 'none'})`);
}

try {
  await main();
  log('PASS');
} catch (e) {
  failed = true;
  console.error('FAIL:', e.message);
  console.error('vigild log: ' + path.join(args.out, 'vigild-https.log'));
} finally {
  for (const b of browsers) await b.close().catch(() => {});
  cleanup();
  if (vigild) {
    await until('vigild to stop', () => vigild.exitCode !== null || vigild.signalCode !== null, 40_000).catch(() => {
      vigild.kill('SIGKILL');
    });
  }
  clearTimeout(hardStop);
  if (!failed) fs.rmSync(tmp, { recursive: true, force: true });
  else console.error('kept for inspection: ' + tmp);
}
process.exit(failed ? 1 : 0);
