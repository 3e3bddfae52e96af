// Cerulean Explorer's export and import: JSON Lines as `cerulean export`
// writes them: a line {"table":T} per table, then {"table":T,"entity":{...}}
// per entity (JSON with minimal metadata, types annotated). Loaded before
// app.js, which calls it.
'use strict';

function download(name, text) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

function exportLine(table, entity) {
  return `{"table":${JSON.stringify(table)},"entity":${stringifyJson(entity)}}\n`;
}

async function exportTables(tables, q, fileName) {
  await withProgress(`Exporting ${tables.length === 1 ? tables[0] : `${tables.length} tables`}`, async (step, signal) => {
    const lines = [];
    let n = 0;
    const saved = state.table;
    try {
      for (const t of tables) {
        state.table = t;
        lines.push(`{"table":${JSON.stringify(t)}}\n`);
        for await (const page of allEntities(q, signal)) {
          for (const e of page) lines.push(exportLine(t, e));
          n += page.length;
          step(n);
        }
      }
    } finally {
      state.table = saved;
    }
    download(fileName, lines.join(''));
    return n;
  });
}

async function importJsonLines(file) {
  const text = await file.text();
  const lines = text.split(/\r?\n/).map((l, k) => ({ l, no: k + 1 })).filter((x) => x.l.trim());
  await withProgress(`Importing ${file.name}`, async (step, signal) => {
    const created = new Set();
    const work = [];
    for (const { l, no } of lines) {
      let doc;
      try { doc = parseJson(l); } catch { doc = null; }
      if (!doc || typeof doc !== 'object' || typeof doc.table !== 'string') {
        throw new ExplorerError('InvalidInput', `${file.name} line ${no}: expected {"table":...,"entity":{...}}`);
      }
      work.push({ doc, no });
    }
    let done = 0;
    step(0, work.length);
    // Tables first (in order), then entities, a few at a time.
    for (const { doc } of work) {
      const key = doc.table.toLowerCase();
      if (created.has(key)) continue;
      const res = await api('POST', '/Tables', { body: JSON.stringify({ TableName: doc.table }),
        headers: { Prefer: 'return-no-content' }, allow: [409] });
      if (res.status === 409) await res.text();
      created.add(key);
    }
    const entities = work.filter((w) => w.doc.entity);
    done = work.length - entities.length;
    step(done, work.length);
    let next = 0;
    const worker = async () => {
      while (next < entities.length) {
        if (signal.aborted) throw new ExplorerError('Cancelled', 'cancelled');
        const { doc, no } = entities[next++];
        const e = doc.entity;
        if (typeof e.PartitionKey !== 'string' || typeof e.RowKey !== 'string') {
          throw new ExplorerError('InvalidInput', `${file.name} line ${no}: the entity has no PartitionKey and RowKey`);
        }
        const body = {};
        for (const [k, v] of Object.entries(e)) {
          if (!k.startsWith('odata.') && k !== 'Timestamp' && k !== 'Timestamp@odata.type') body[k] = v;
        }
        try {
          await api('PUT', entityPath(doc.table, e.PartitionKey, e.RowKey), { body: stringifyJson(body) });
        } catch (err) {
          if (err instanceof ExplorerError) err.message = `${file.name} line ${no}: ${err.message}`;
          throw err;
        }
        step(++done, work.length);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  });
}

// Deletes every entity the current query matches, after confirmation.
async function deleteMatching() {
  const q = { ...currentQuery() };
  const what = q.filter ? `matching ${q.filter}` : '(all of them)';
  if (!(await confirmDialog(`Delete every entity of ${state.table} ${what}?`, 'Delete'))) return;
  await withProgress(`Deleting from ${state.table}`, async (step, signal) => {
    const keys = [];
    for await (const page of allEntities({ ...q, select: 'PartitionKey,RowKey' }, signal)) {
      for (const e of page) keys.push([e.PartitionKey, e.RowKey]);
      step(keys.length);
    }
    let done = 0;
    let next = 0;
    step(0, keys.length);
    const worker = async () => {
      while (next < keys.length) {
        if (signal.aborted) throw new ExplorerError('Cancelled', 'cancelled');
        const [pk, rk] = keys[next++];
        await api('DELETE', entityPath(state.table, pk, rk), { headers: { 'If-Match': '*' }, allow: [404] });
        step(++done, keys.length);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  });
}
