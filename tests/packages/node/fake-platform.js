'use strict';
// Preloaded with `node -r` to make this process look like another machine to cerulean-tables:
// CERULEAN_FAKE_PLATFORM / CERULEAN_FAKE_ARCH replace process.platform / process.arch, and
// CERULEAN_FAKE_LIBC ('glibc' or 'musl') decides whether Node's diagnostic report names a glibc
// (header.glibcVersionRuntime), which is how a musl-built Node differs.

const { CERULEAN_FAKE_PLATFORM: platform, CERULEAN_FAKE_ARCH: arch, CERULEAN_FAKE_LIBC: libc } = process.env;
if (platform) Object.defineProperty(process, 'platform', { value: platform, configurable: true, enumerable: true });
if (arch) Object.defineProperty(process, 'arch', { value: arch, configurable: true, enumerable: true });
if (libc) {
  const getReport = process.report.getReport.bind(process.report);
  process.report.getReport = (...args) => {
    const report = getReport(...args);
    if (libc === 'musl') delete report.header.glibcVersionRuntime;
    else report.header.glibcVersionRuntime ??= '2.36';
    return report;
  };
}
