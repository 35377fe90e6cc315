// Vigil web UI: exports with progress. An export (export.mp4?from&to) is fetched with a
// ReadableStream reader, so the list in the side panel shows bytes received — and the share of
// Content-Length when vigild sends one (a built export; a streamed, fragmented one has no length,
// so only bytes show) — with a Cancel button (AbortController). When it is complete it is saved
// through a blob: URL (an <a download> clicked once), and the entry keeps a link to save it again.
// Loaded after player.js (index.html).
'use strict';

let exportSeq = 0;

function exportFileName(camera, fromMs) {
  const d = new Date(fromMs);
  const pad = (n) => String(n).padStart(2, '0');
  return `${camera}-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-` +
    `${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}.mp4`;
}

// Downloads CAMERA's recording [FROM_MS, TO_MS) (EXTRA: more export.mp4 parameters); returns the
// entry's <li> (data-state: running | done | cancelled | failed; data-bytes, data-total).
function startExport(camera, fromMs, toMs, extra = {}) {
  const li = document.createElement('li');
  li.className = 'export';
  li.id = 'export-' + (++exportSeq);
  const name = exportFileName(camera, fromMs);
  const title = document.createElement('div');
  title.textContent = `${camera} ${fmtTime(fromMs, true)} – ${fmtTime(toMs)}`;
  const bar = document.createElement('progress');
  bar.max = 1;
  bar.setAttribute('aria-label', 'Export of ' + name);
  const text = document.createElement('span');
  text.className = 'bytes';
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.textContent = 'Cancel';
  li.append(title, bar, ' ', text, ' ', cancel);
  const list = $('exports');
  list.querySelector('.none')?.remove();
  list.prepend(li);

  const ctl = new AbortController();
  cancel.addEventListener('click', () => ctl.abort());
  const set = (state, msg) => {
    li.dataset.state = state;
    if (msg !== undefined) text.textContent = msg;
  };
  set('running', 'starting…');
  const url = mediaUrl(`${camPath(camera)}/export.mp4`, { from: at(fromMs), to: at(toMs), ...extra });
  (async () => {
    const res = await fetch(url, { signal: ctl.signal, cache: 'no-store' });
    if (!res.ok) {
      let why = res.statusText;
      try { why = (await res.json()).error || why; } catch { /* not JSON */ }
      throw new Error(`HTTP ${res.status}: ${why}`);
    }
    const total = Number(res.headers.get('content-length')) || 0;
    li.dataset.total = String(total);
    if (!total) bar.removeAttribute('value');  // indeterminate: a streamed export has no length
    const reader = res.body.getReader();
    const chunks = [];
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      got += value.byteLength;
      li.dataset.bytes = String(got);
      if (total) {
        bar.value = got / total;
        set('running', `${fmtBytes(got)} of ${fmtBytes(total)} (${Math.floor((got / total) * 100)} %)`);
      } else {
        set('running', `${fmtBytes(got)} (streamed: size not known ahead)`);
      }
    }
    if (total && got !== total) throw new Error(`the export ended after ${got} of ${total} bytes`);
    const blob = new Blob(chunks, { type: 'video/mp4' });
    li.dataset.bytes = String(blob.size);
    bar.max = 1;
    bar.value = 1;
    const save = document.createElement('a');
    save.className = 'button';
    save.href = URL.createObjectURL(blob);
    save.download = name;
    save.textContent = 'Save again';
    cancel.replaceWith(save);
    set('done', `${fmtBytes(blob.size)} — saved as ${name}`);
    save.click();
  })().catch((e) => {
    if (ctl.signal.aborted) set('cancelled', `cancelled after ${fmtBytes(Number(li.dataset.bytes || 0))}`);
    else set('failed', 'failed: ' + (e.message || e));
    cancel.remove();
  });
  return li;
}
