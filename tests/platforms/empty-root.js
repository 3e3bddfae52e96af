'use strict';
// A static musl server (scripts/cross.sh linux-musl-x64 | linux-musl-arm64) in an empty root:
// a fresh folder holding the binary alone (and, for arm64, the static qemu that runs it) becomes
// / for the server (chroot), so it has no libc, no /etc, no /tmp and no shell. There it serves
// the JavaScript SDK from a data folder, passes its own health check (`cerulean health`, the
// image's HEALTHCHECK), stops on SIGTERM and serves the same data again when restarted.
//
//   node tests/platforms/empty-root.js linux-musl-x64|linux-musl-arm64 [BINARY]
//
// BINARY defaults to build/cross/TARGET/cerulean. Needs root (chroot). Loopback only, on a port
// the kernel picks. Prints PASS/FAIL lines and "N passed, N failed"; exit status 1 iff one failed.

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..');
const { TableClient, AzureNamedKeyCredential } = require(
  path.join(REPO, 'tests', 'e2e', 'node', 'node_modules', '@azure', 'data-tables'));

const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const READY_RE = /successfully listening at http:\/\/127\.0\.0\.1:(\d+)/;
const QEMU = '/usr/bin/qemu-aarch64-static';

const target = process.argv[2];
if (target !== 'linux-musl-x64' && target !== 'linux-musl-arm64') {
  console.error('usage: node tests/platforms/empty-root.js linux-musl-x64|linux-musl-arm64 [BINARY]');
  process.exit(2);
}
const binary = path.resolve(process.argv[3] || path.join(REPO, 'build', 'cross', target, 'cerulean'));

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${target} ${name}${detail ? ` — ${detail}` : ''}`);
  return ok;
}

// The command that runs `args` of the server inside `root`.
function inRoot(root, args) {
  const prefix = target === 'linux-musl-arm64' ? ['/qemu-aarch64-static'] : [];
  return ['chroot', [root, ...prefix, '/cerulean', ...args]];
}

// Starts the server in `root` on /data; resolves {child, port} once it prints its start-up line.
function start(root) {
  const [cmd, args] = inRoot(root, ['--tableHost', '127.0.0.1', '--tablePort', '0', '--location', '/data']);
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no start-up line: ${out}`)); }, 60000);
    const onData = (chunk) => {
      out += chunk;
      const m = READY_RE.exec(out);
      if (m) { clearTimeout(timer); resolve({ child, port: Number(m[1]) }); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}`)); });
  });
}

function stop(child) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.removeAllListeners('exit');
    child.on('exit', (code, signal) => { clearTimeout(timer); resolve({ code, signal }); });
    child.kill('SIGTERM');
  });
}

function client(port) {
  return new TableClient(`http://127.0.0.1:${port}/${ACCOUNT}`, 'emptyroot',
    new AzureNamedKeyCredential(ACCOUNT, KEY), { allowInsecureConnection: true });
}

async function main() {
  if (!check('binary exists', fs.existsSync(binary), binary)) return;
  const file = spawnSync('file', ['-b', binary], { encoding: 'utf8' }).stdout || '';
  check('statically linked', /statically linked/.test(file) && !/dynamically/.test(file), file.trim());
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cerulean-empty-root-'));
  try {
    fs.copyFileSync(binary, path.join(root, 'cerulean'));
    fs.chmodSync(path.join(root, 'cerulean'), 0o755);
    if (target === 'linux-musl-arm64') {
      fs.copyFileSync(QEMU, path.join(root, 'qemu-aarch64-static'));
      fs.chmodSync(path.join(root, 'qemu-aarch64-static'), 0o755);
    }
    fs.mkdirSync(path.join(root, 'data'));
    const before = new Set(fs.readdirSync(root));

    let server = await start(root);
    check('serves in an empty root', true, `port ${server.port}`);
    const tables = client(server.port);
    await tables.createTable();
    const actions = [];
    for (let i = 0; i < 50; i++) {
      actions.push(['create', { partitionKey: 'p', rowKey: String(i).padStart(3, '0'), n: i, d: i / 4 }]);
    }
    await tables.submitTransaction(actions);
    const first = [];
    for await (const e of tables.listEntities({ queryOptions: { filter: "PartitionKey eq 'p' and n ge 10" } })) first.push(e);
    check('answers a batch and a query', first.length === 40 && first[0].rowKey === '010' && first[0].d === 2.5,
      `${first.length} entities`);

    const [cmd, args] = inRoot(root, ['health', '--tableHost', '127.0.0.1', '--tablePort', String(server.port)]);
    const health = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30000 });
    check('its health check passes (cerulean health)', health.status === 0, `exit ${health.status} ${health.stderr}`);

    const stopped = await stop(server.child);
    check('stops on SIGTERM', stopped.code === 0, `code ${stopped.code} signal ${stopped.signal}`);

    server = await start(root);
    const again = [];
    for await (const e of client(server.port).listEntities()) again.push(e);
    check('serves the same data after a restart', again.length === 50, `${again.length} entities`);
    await stop(server.child);

    const extra = fs.readdirSync(root).filter((name) => !before.has(name));
    check('writes nothing outside /data', extra.length === 0, extra.join(', '));
  } catch (e) {
    check('run', false, e.message);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().finally(() => {
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
});
