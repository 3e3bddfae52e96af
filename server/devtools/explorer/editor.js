// Cerulean Explorer's entity editor: one entity's properties as typed rows,
// saved with the ETag it was read with. Loaded before app.js, which calls it.
'use strict';

const editor = { original: null, isNew: false };

function propRow(p) {
  const tr = document.createElement('tr');
  const name = document.createElement('input');
  name.value = p.name;
  name.className = 'p-name';
  name.setAttribute('aria-label', 'Property name');
  name.spellcheck = false;
  const type = document.createElement('select');
  type.className = 'p-type';
  type.setAttribute('aria-label', 'Type');
  for (const t of EDM_TYPES) type.add(new Option(t, t, false, t === p.type));
  const valueCell = document.createElement('td');
  const makeValue = (t, v) => {
    valueCell.textContent = '';
    let input;
    if (t === 'Boolean') {
      input = document.createElement('select');
      for (const b of ['true', 'false']) input.add(new Option(b, b, false, b === v));
    } else {
      input = document.createElement('input');
      input.value = v;
      input.spellcheck = false;
      input.placeholder = {
        DateTime: '2024-01-31T12:00:00.0000000Z', Guid: '00000000-0000-0000-0000-000000000000',
        Binary: 'base64', Double: '1.5, NaN, Infinity, -Infinity', Int64: '-9223372036854775808…', Int32: '0',
      }[t] || '';
    }
    input.className = 'p-value';
    input.setAttribute('aria-label', 'Value');
    valueCell.append(input);
  };
  makeValue(p.type, p.value);
  type.addEventListener('change', () => {
    const old = valueCell.querySelector('.p-value').value;
    makeValue(type.value, type.value === 'Boolean' ? (old === 'true' ? 'true' : 'false') : old);
  });
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.textContent = 'Remove';
  remove.addEventListener('click', () => tr.remove());
  const td = (el) => { const c = document.createElement('td'); c.append(el); return c; };
  tr.append(td(name), td(type), valueCell, td(remove));
  return tr;
}

function fillEditor(e, isNew) {
  editor.original = e;
  editor.isNew = isNew;
  $('entity-title').textContent = isNew ? `New entity in ${state.table}` : `${state.table}: ${e.pk} / ${e.rk}`;
  $('e-pk').value = e.pk;
  $('e-rk').value = e.rk;
  $('e-pk').readOnly = !isNew;
  $('e-rk').readOnly = !isNew;
  $('e-timestamp').textContent = e.timestamp || '—';
  $('e-etag').textContent = e.etag || '—';
  const body = $('props').tBodies[0];
  body.textContent = '';
  for (const p of e.props) body.append(propRow(p));
  $('e-insert').hidden = !isNew;
  for (const id of ['e-replace', 'e-merge', 'e-reload', 'e-delete']) $(id).hidden = isNew;
  $('entity-error').hidden = true;
}

function editedEntity() {
  const props = [...$('props').tBodies[0].rows].map((tr) => ({
    name: tr.querySelector('.p-name').value,
    type: tr.querySelector('.p-type').value,
    value: tr.querySelector('.p-value').value,
  }));
  return { pk: $('e-pk').value, rk: $('e-rk').value, props };
}

function openEntity(e) {
  fillEditor(e, false);
  if (!$('entity-dialog').open) $('entity-dialog').showModal();
  $('props').querySelector('input')?.focus();
}

function newEntity() {
  if (!state.table) return;
  fillEditor({ pk: '', rk: '', timestamp: '', etag: '', props: [{ name: '', type: 'String', value: '' }] }, true);
  $('entity-dialog').showModal();
  $('e-pk').focus();
}

function entityError(err) {
  const box = $('entity-error');
  box.textContent = '';
  if (err instanceof ExplorerError && err.status === 412) {
    box.append('This entity was changed by someone else since you loaded it (412 UpdateConditionNotSatisfied). ');
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'Reload it';
    b.addEventListener('click', () => reloadEntity());
    box.append(b);
  } else if (err instanceof ExplorerError) {
    box.textContent = `${err.code}: ${err.message}`;
  } else {
    box.textContent = String(err.message || err);
  }
  box.hidden = false;
}

async function entityAction(fn) {
  $('entity-error').hidden = true;
  try {
    await fn();
  } catch (e) {
    entityError(e);
  }
}

async function fetchEntity(pk, rk) {
  const res = await api('GET', entityPath(state.table, pk, rk));
  const e = fromWire(parseJson(await res.text()));
  e.etag = res.headers.get('ETag') || e.etag;
  return e;
}

async function reloadEntity() {
  await entityAction(async () => {
    const e = await fetchEntity(editor.original.pk, editor.original.rk);
    fillEditor(e, false);
  });
}

async function afterWrite(pk, rk) {
  const e = await fetchEntity(pk, rk);
  fillEditor(e, false);
  await guarded(() => loadPage(state.pageStack[state.pageStack.length - 1]));
}

function insertEntity() {
  return entityAction(async () => {
    const e = editedEntity();
    const body = toWireText(e, true);
    await api('POST', `/${state.table}`, { body, headers: { Prefer: 'return-no-content' } });
    await afterWrite(e.pk, e.rk);
  });
}

function updateEntity(method) {
  return entityAction(async () => {
    const e = editedEntity();
    const body = toWireText(e, false);
    await api(method, entityPath(state.table, editor.original.pk, editor.original.rk),
      { body, headers: { 'If-Match': editor.original.etag || '*' } });
    await afterWrite(editor.original.pk, editor.original.rk);
  });
}

function deleteEntity() {
  return entityAction(async () => {
    const o = editor.original;
    if (!(await confirmDialog(`Delete entity ${o.pk} / ${o.rk}?`, 'Delete'))) return;
    await api('DELETE', entityPath(state.table, o.pk, o.rk), { headers: { 'If-Match': o.etag || '*' } });
    $('entity-dialog').close();
    await guarded(() => loadPage(state.pageStack[state.pageStack.length - 1]));
  });
}
