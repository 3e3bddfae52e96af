'use strict';
// The platforms cerulean-tables has a prebuilt server for: one npm package each, named
// @cerulean-tables/<process.platform>-<process.arch>[-musl] (as esbuild and Biome name theirs), so
// the name follows from what Node reports. `target` is the build's name for it (scripts/cross.sh
// TARGET writes build/cross/TARGET/; linux-x64 is the portable build of scripts/package.sh).
// scripts/package.sh packs one package per platform whose server exists and lists those as the
// main package's optionalDependencies, pinned to its version; npm installs only the one whose
// os/cpu/libc match the machine.

const PLATFORMS = [
  { target: 'linux-x64', os: 'linux', cpu: 'x64', libc: 'glibc', executable: 'cerulean',
    description: 'Linux x64 with glibc 2.34 or newer' },
  { target: 'linux-arm64', os: 'linux', cpu: 'arm64', libc: 'glibc', executable: 'cerulean',
    description: 'Linux arm64 with glibc 2.34 or newer' },
  { target: 'linux-musl-x64', os: 'linux', cpu: 'x64', libc: 'musl', executable: 'cerulean',
    description: 'Linux x64 with musl (Alpine): a fully static executable' },
  { target: 'linux-musl-arm64', os: 'linux', cpu: 'arm64', libc: 'musl', executable: 'cerulean',
    description: 'Linux arm64 with musl (Alpine): a fully static executable' },
  { target: 'win-x64', os: 'win32', cpu: 'x64', libc: null, executable: 'cerulean.exe',
    description: 'Windows x64' },
  { target: 'osx-arm64', os: 'darwin', cpu: 'arm64', libc: null, executable: 'cerulean',
    description: 'macOS arm64 (Apple silicon)' },
  { target: 'osx-x64', os: 'darwin', cpu: 'x64', libc: null, executable: 'cerulean',
    description: 'macOS x64' },
].map((p) => ({ ...p, package: `@cerulean-tables/${p.os}-${p.cpu}${p.libc === 'musl' ? '-musl' : ''}` }));

// The package.json of the platform package for `target` (a target of PLATFORMS).
function platformManifest(target, version) {
  const p = PLATFORMS.find((x) => x.target === target);
  if (!p) throw new Error(`no platform ${target}`);
  return {
    name: p.package,
    version,
    description: `The Cerulean server for ${p.description}, for cerulean-tables (which installs it on that platform only).`,
    os: [p.os],
    cpu: [p.cpu],
    ...(p.libc ? { libc: [p.libc] } : {}),
    license: 'UNLICENSED',
    files: ['bin/', 'LICENSE', 'THIRD-PARTY-NOTICES.txt'],
    preferUnplugged: true,
  };
}

module.exports = { PLATFORMS, platformManifest };

// For scripts: `node lib/platforms.js` prints one line per platform, "target package
// executable"; `node lib/platforms.js manifest TARGET VERSION` prints that package.json.
if (require.main === module) {
  const [command, target, version] = process.argv.slice(2);
  if (command === 'manifest') {
    process.stdout.write(`${JSON.stringify(platformManifest(target, version), null, 2)}\n`);
  } else {
    for (const p of PLATFORMS) console.log(`${p.target} ${p.package} ${p.executable}`);
  }
}
