// Vigil web UI: administration (admin tokens; the Admin view shows only when GET
// /api/v1/tokens answers 200). Cameras: add (name, URL, substream URL, retention days and bytes,
// enabled), edit, enable or disable, remove (after a confirmation; vigild deletes a camera without
// recordings and disables one with them, and says which). Camera groups: create, rename, set the
// cameras (in wall order), delete. Every error the API returns is shown as it is.
// Loaded after api.js (index.html).
'use strict';

let editing = null;       // the camera being edited (name), or null: adding
let editingGroup = null;  // the group being edited (id), or null: creating

function adminError(msg) {
  $('admin-error').hidden = !msg;
  $('admin-error').textContent = msg || '';
}

function adminNote(msg) { $('admin-note').textContent = msg || ''; }

// Whether the token may administer: the token list is for admins only.
async function probeAdmin() {
  try {
    await api('/api/v1/tokens');
    state.admin = true;
  } catch (e) {
    if (e.status === 401) throw e;
    state.admin = false;
  }
  document.querySelector('nav.views [data-view="admin"]').hidden = !state.admin;
  $('lock-form').hidden = !state.admin;
}

function retentionText(c) {
  const kept = [];
  if (c.retention_days != null) kept.push(`${c.retention_days} days`);
  if (c.retention_bytes != null) kept.push(fmtBytes(c.retention_bytes));
  return kept.join(', ') || 'until space is needed';
}

async function loadAdmin() {
  await loadCameras();
  const rows = await Promise.all(state.cameras.map((c) => api(camPath(c.name)).catch(() => null)));
  const tbody = $('admin-cameras').tBodies[0];
  tbody.replaceChildren();
  for (const c of rows.filter(Boolean)) {
    state.details.set(c.name, { at: Date.now(), body: c });
    const tr = tbody.insertRow();
    tr.dataset.camera = c.name;
    tr.dataset.enabled = String(c.enabled);
    for (const text of [c.name, c.state, c.enabled ? 'yes' : 'no', c.url || '(pushed)', c.substream_url || '', retentionText(c)]) {
      tr.insertCell().textContent = text;
    }
    const td = tr.insertCell();
    const button = (label, cls, fn) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = cls;
      b.textContent = label;
      b.setAttribute('aria-label', `${label} ${c.name}`);
      b.addEventListener('click', () => fn().catch((e) => adminError(e.message)));
      td.append(b, ' ');
    };
    button('Edit', 'edit', async () => editCamera(c));
    button(c.enabled ? 'Disable' : 'Enable', 'toggle', async () => {
      await api(camPath(c.name), 'PATCH', { enabled: !c.enabled });
      adminError('');
      adminNote(`${c.name} ${c.enabled ? 'disabled' : 'enabled'}`);
      await loadAdmin();
    });
    button('Remove', 'remove', async () => {
      if (!confirm(`Remove camera ${c.name}? Without recordings it is deleted; with them it is disabled and keeps them.`)) return;
      const r = await api(camPath(c.name), 'DELETE');
      adminError('');
      adminNote(`${c.name}: ${r.result} — ${r.detail}`);
      await loadAdmin();
    });
  }
  await loadGroupsAdmin();
}

function resetCameraForm() {
  editing = null;
  $('cam-form').reset();
  $('cam-name').readOnly = false;
  $('cam-form-title').textContent = 'Add a camera';
  $('cam-save').textContent = 'Add';
  $('cam-cancel').hidden = true;
}

function editCamera(c) {
  editing = c.name;
  $('cam-name').value = c.name;
  $('cam-name').readOnly = true;
  // A URL shown is redacted (no credentials): it is sent back only when the operator changes it.
  $('cam-url').value = c.url || '';
  $('cam-sub').value = c.substream_url || '';
  $('cam-url').dataset.shown = c.url || '';
  $('cam-sub').dataset.shown = c.substream_url || '';
  $('cam-days').value = c.retention_days ?? '';
  $('cam-bytes').value = c.retention_bytes ?? '';
  $('cam-enabled').checked = c.enabled;
  $('cam-form-title').textContent = 'Edit ' + c.name;
  $('cam-save').textContent = 'Save';
  $('cam-cancel').hidden = false;
  $('cam-url').focus();
}

$('cam-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const num = (id) => ($(id).value === '' ? null : Number($(id).value));
  const text = (id) => $(id).value.trim() || null;
  try {
    if (editing) {
      const change = { enabled: $('cam-enabled').checked, retention_days: num('cam-days'), retention_bytes: num('cam-bytes') };
      for (const [id, field] of [['cam-url', 'url'], ['cam-sub', 'substream_url']]) {
        if ($(id).value.trim() !== ($(id).dataset.shown || '')) change[field] = text(id);
      }
      await api(camPath(editing), 'PATCH', change);
      adminNote(`${editing} saved`);
    } else {
      const body = { name: $('cam-name').value.trim(), enabled: $('cam-enabled').checked };
      if (text('cam-url')) body.url = text('cam-url');
      if (text('cam-sub')) body.substream_url = text('cam-sub');
      if (num('cam-days') != null) body.retention_days = num('cam-days');
      if (num('cam-bytes') != null) body.retention_bytes = num('cam-bytes');
      await api('/api/v1/cameras', 'POST', body);
      adminNote(`${body.name} added`);
    }
    adminError('');
    resetCameraForm();
    await loadAdmin();
  } catch (err) { adminError(err.message); }
});
$('cam-cancel').addEventListener('click', resetCameraForm);

// ---------- groups ----------

async function loadGroupsAdmin() {
  await loadGroups();
  const tbody = $('admin-groups').tBodies[0];
  tbody.replaceChildren();
  for (const g of state.groups) {
    const tr = tbody.insertRow();
    tr.dataset.group = g.name;
    tr.insertCell().textContent = g.name;
    tr.insertCell().textContent = g.cameras.join(', ') || '(none)';
    const td = tr.insertCell();
    const edit = document.createElement('button');
    edit.type = 'button';
    edit.textContent = 'Edit';
    edit.setAttribute('aria-label', 'Edit group ' + g.name);
    edit.addEventListener('click', () => editGroup(g));
    const del = document.createElement('button');
    del.type = 'button';
    del.textContent = 'Delete';
    del.setAttribute('aria-label', 'Delete group ' + g.name);
    del.addEventListener('click', async () => {
      if (!confirm(`Delete group ${g.name}? Its cameras stay.`)) return;
      try {
        await api('/api/v1/groups/' + g.id, 'DELETE');
        adminError('');
        await loadGroupsAdmin();
      } catch (e) { adminError(e.message); }
    });
    td.append(edit, ' ', del);
  }
  fillGroupMembers(editingGroup ? (state.groups.find((g) => g.id === editingGroup) || {}).cameras || [] : []);
}

// One checkbox per camera; ticking appends to the order, so the wall fills in the order ticked.
let memberOrder = [];
function fillGroupMembers(selected) {
  memberOrder = [...selected];
  const box = $('group-members');
  box.querySelectorAll('label').forEach((l) => l.remove());
  for (const c of state.cameras) {
    const label = document.createElement('label');
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    cb.value = c.name;
    cb.checked = selected.includes(c.name);
    cb.addEventListener('change', () => {
      memberOrder = memberOrder.filter((n) => n !== c.name);
      if (cb.checked) memberOrder.push(c.name);
    });
    label.append(cb, ' ' + c.name);
    box.append(label);
  }
}

function editGroup(g) {
  editingGroup = g.id;
  $('group-name').value = g.name;
  fillGroupMembers(g.cameras);
  $('group-form-title').textContent = 'Edit group ' + g.name;
  $('group-save').textContent = 'Save';
  $('group-cancel').hidden = false;
  $('group-name').focus();
}

function resetGroupForm() {
  editingGroup = null;
  $('group-name').value = '';
  fillGroupMembers([]);
  $('group-form-title').textContent = 'New group';
  $('group-save').textContent = 'Create';
  $('group-cancel').hidden = true;
}

$('group-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const body = { name: $('group-name').value.trim(), cameras: memberOrder };
  try {
    if (editingGroup) await api('/api/v1/groups/' + editingGroup, 'PATCH', body);
    else await api('/api/v1/groups', 'POST', body);
    adminError('');
    adminNote(`group ${body.name} saved`);
    resetGroupForm();
    await loadGroupsAdmin();
    await loadCameras();
  } catch (err) { adminError(err.message); }
});
$('group-cancel').addEventListener('click', resetGroupForm);
