// Vigil web UI: evidence locks. Create one (camera, from, to, reason; from the camera view's
// timeline selection with "Lock selection"), list the active ones (the released ones too with the
// toggle), release one. Creating and releasing need an admin token: the API's answer (403 for
// another token, 409 when nothing is recorded in the range) is shown as it is.
// Loaded after api.js (index.html).
'use strict';

function fillLockCameras() {
  const sel = $('lock-camera');
  const keep = sel.value || state.camera || '';
  sel.replaceChildren();
  for (const c of state.cameras) sel.append(new Option(c.name, c.name));
  if (keep) sel.value = keep;
}

function lockError(msg) {
  $('lock-error').hidden = !msg;
  $('lock-error').textContent = msg || '';
}

async function loadLocks() {
  fillLockCameras();
  const body = await api('/api/v1/locks' + ($('lock-all').checked ? '?all=true' : ''));
  const tbody = $('locks').tBodies[0];
  tbody.replaceChildren();
  for (const l of body.locks || []) {
    const tr = tbody.insertRow();
    tr.dataset.id = String(l.id);
    tr.dataset.active = String(l.active);
    const cells = [String(l.id), l.camera, fmtTime(l.from_us / 1000, true), fmtTime(l.to_us / 1000, true), l.reason,
      l.locked_by || '', fmtTime(l.locked_at_us / 1000, true),
      l.active ? 'active' : 'released ' + fmtTime(l.unlocked_at_us / 1000, true)];
    for (const text of cells) tr.insertCell().textContent = text;
    const td = tr.insertCell();
    if (l.active && state.admin) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'release';
      b.textContent = 'Release';
      b.setAttribute('aria-label', `Release lock ${l.id} (${l.camera}: ${l.reason})`);
      b.addEventListener('click', async () => {
        if (!confirm(`Release lock ${l.id} on ${l.camera} (${l.reason})? Retention may then reclaim the range.`)) return;
        try {
          await api('/api/v1/locks/' + l.id, 'DELETE');
          lockError('');
          await loadLocks();
        } catch (e) { lockError(e.message); }
      });
      td.append(b);
    }
  }
  if (!tbody.rows.length) {
    const td = tbody.insertRow().insertCell();
    td.colSpan = 9;
    td.className = 'muted';
    td.textContent = $('lock-all').checked ? 'no locks' : 'no active locks';
  }
}

$('lock-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    const made = await api('/api/v1/locks', 'POST', {
      camera: $('lock-camera').value, from: $('lock-from').value.trim(), to: $('lock-to').value.trim(),
      reason: $('lock-reason').value.trim(),
    });
    lockError('');
    $('lock-reason').value = '';
    setStatus(`locked ${made.camera} (lock ${made.ids.join(', ')})`);
    await loadLocks();
  } catch (err) { lockError(err.message); }
});
$('lock-all').addEventListener('change', () => loadLocks().catch((e) => lockError(e.message)));

// The timeline's selection into the lock form.
$('lock-selection').addEventListener('click', () => {
  const s = state.selection;
  if (!s || !state.camera) return;
  showView('locks');
  $('lock-camera').value = state.camera;
  $('lock-from').value = at(s.from);
  $('lock-to').value = at(s.to);
  $('lock-reason').focus();
});
