// What the web UI's end-to-end scripts (ui.e2e.mjs, ui_wall.e2e.mjs) share, so each holds only its
// own checks: the command line (--vigild --vigil --web --deps --out), a log stamped with the time
// since start, a scratch directory, one hard deadline that stops whatever the script started, checks
// that throw, polling with a deadline, running a program to its end, and the run of the script's
// main() with its failure screenshot, the processes stopped and its exit status (0 only if every
// check passed; the scratch directory is kept when one failed).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.VIGIL_CHROMIUM || '/usr/bin/chromium';

// SCRIPT: the script's file name (for its usage line); DEADLINE_MS: the whole run's bound;
// TMP_PREFIX: the scratch directory's name; RUNNING(): what the script started so far,
// { vigild, browser, recorders } (read when stopping them).
export function harness({ script, deadlineMs, tmpPrefix, running }) {
  const args = {};
  for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  for (const k of ['vigild', 'vigil', 'web', 'deps', 'out']) {
    if (!args[k]) {
      console.error(`usage: node ${script} --vigild P --vigil P --web DIR --deps DIR --out DIR (missing --${k})`);
      process.exit(2);
    }
  }
  const t0 = Date.now();
  const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
  fs.mkdirSync(args.out, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
  fs.chmodSync(tmp, 0o755);  // the embedded PostgreSQL runs as another user when we are root
  const h = { args, tmp, log, failed: false };

  h.cleanup = () => {
    const { vigild, recorders = [] } = running();
    for (const r of recorders) if (r.exitCode === null && r.signalCode === null) r.kill('SIGKILL');
    if (vigild && vigild.exitCode === null) vigild.kill('SIGTERM');
  };
  const hardStop = setTimeout(() => {
    console.error(`FAIL: the test did not finish within ${deadlineMs / 1000} s`);
    h.failed = true;
    h.cleanup();
    const { browser } = running();
    if (browser) browser.close().catch(() => {});
    setTimeout(() => process.exit(1), 5000).unref();
  }, deadlineMs);

  h.check = (cond, what) => {
    if (!cond) throw new Error('check failed: ' + what);
    log('ok:', what);
  };

  h.until = async (what, fn, ms = 20_000, every = 100) => {
    const end = Date.now() + ms;
    let last;
    while (Date.now() < end) {
      try { last = await fn(); if (last) return last; } catch (e) { last = e; }
      await new Promise((r) => setTimeout(r, every));
    }
    throw new Error(`timed out (${ms / 1000} s) waiting for ${what}${last instanceof Error ? ': ' + last.message : ''}`);
  };

  // PROGRAM ARGV to its end, its output in TMP/LOG_NAME (quoted when it fails); ENV added to ours.
  h.run = (program, argv, logName, env = {}) => new Promise((resolve, reject) => {
    const out = fs.openSync(path.join(tmp, logName), 'w');
    const p = spawn(program, argv, { stdio: ['ignore', out, out], env: { ...process.env, ...env } });
    p.on('error', reject);
    p.on('exit', (code, sig) => {
      fs.closeSync(out);
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(program)} ${argv.slice(0, 4).join(' ')} exited ${code ?? sig}:\n` +
        fs.readFileSync(path.join(tmp, logName), 'utf8').slice(-2000)));
    });
  });

  // Runs MAIN; on a failure, a screenshot of the first page to OUT/FAILURE_SHOT and where vigild's
  // log (OUT/VIGILD_LOG) is; then stops everything and exits with the result.
  h.runMain = async (main, { failureShot, vigildLog }) => {
    try {
      await main();
      log('PASS');
    } catch (e) {
      h.failed = true;
      console.error('FAIL:', e.message);
      try {
        const { browser } = running();
        const shot = path.join(args.out, failureShot);
        if (browser) {
          const pages = browser.contexts().flatMap((c) => c.pages());
          if (pages[0]) await pages[0].screenshot({ path: shot, fullPage: true });
          console.error('failure screenshot:', shot);
        }
      } catch { /* best effort */ }
      console.error('vigild log: ' + path.join(args.out, vigildLog));
    } finally {
      const { vigild, browser } = running();
      if (browser) await browser.close().catch(() => {});
      h.cleanup();
      if (vigild) {
        await h.until('vigild to stop', () => vigild.exitCode !== null || vigild.signalCode !== null, 40_000)
          .catch(() => vigild.kill('SIGKILL'));
      }
      clearTimeout(hardStop);
      if (!h.failed) fs.rmSync(tmp, { recursive: true, force: true });
      else console.error('kept for inspection: ' + tmp);
    }
    process.exit(h.failed ? 1 : 0);
  };
  return h;
}
