#!/usr/bin/env bash
# Builds Cerulean's packages into dist/ (nothing is published):
#
#   cerulean_<version>_amd64.deb       the server as a Debian service (packaging/debian/)
#   cerulean_<version>_arm64.deb       the same for arm64, when $CROSS_DIR/linux-arm64/cerulean exists
#   Cerulean.Testing.<version>.nupkg   the server and a .NET API for tests (packaging/nuget/)
#   Cerulean.Aspire.Hosting.<version>.nupkg   AddCerulean for an Aspire AppHost (packaging/nuget/)
#   cerulean-tables-<version>.tgz      the `cerulean` command and a JavaScript API (packaging/npm/)
#   cerulean-tables-<platform>-<version>.tgz
#                                      the server of one platform (@cerulean-tables/<platform>)
#
# The .deb carries the Release build of ${BUILD_DIR:-build} and depends on Debian's shared
# libraries (dpkg-shlibdeps). The NuGet and npm packages carry the portable server for linux-x64
# (the CMake target cerulean_portable: glibc 2.34 or newer and libgcc_s), built from the
# same objects; its simdjson.cpp comes from Debian's source package of the installed
# libsimdjson-dev. They also carry every other platform's server that scripts/cross.sh TARGET
# built, as $CROSS_DIR/TARGET/cerulean (cerulean.exe for win-x64); a platform without one is
# left out. <version> is the CMake project version.
#
#   bash scripts/package.sh            # all of them
#   bash scripts/package.sh deb npm    # some of them (deb, nuget, npm)
#
# Environment: BUILD_DIR (default build), DIST_DIR (default dist), JOBS (default nproc),
# CROSS_DIR (default build/cross).
# Installs dpkg-dev when dpkg-shlibdeps is missing; needs dotnet for nuget and npm for npm.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=notices.sh
source scripts/notices.sh
repo=$(pwd)
build_dir=${BUILD_DIR:-build}
[[ $build_dir == /* ]] || build_dir=$repo/$build_dir
dist=${DIST_DIR:-dist}
[[ $dist == /* ]] || dist=$repo/$dist
jobs=${JOBS:-$(nproc)}
work=$build_dir/package
version=$(sed -n 's/^project(cerulean VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
[[ -n $version ]] || { echo "package: no project version in CMakeLists.txt" >&2; exit 1; }

kinds=("$@")
((${#kinds[@]} > 0)) || kinds=(deb nuget npm)
wants() {
  local k
  for k in "${kinds[@]}"; do [[ $k == "$1" ]] && return 0; done
  return 1
}

log() { printf 'package: %s\n' "$*" >&2; }

# The servers of scripts/cross.sh: $cross/TARGET/cerulean (cerulean.exe for win-x64).
cross=${CROSS_DIR:-$repo/build/cross}
[[ $cross == /* ]] || cross=$repo/$cross

# The notices for the server of TARGET: those cross.sh wrote beside it, else the portable build's.
target_notices() {
  if [[ $1 != linux-x64 && -f $cross/$1/THIRD-PARTY-NOTICES.txt ]]; then
    cat "$cross/$1/THIRD-PARTY-NOTICES.txt"
  else
    cat "$portable_notices"
  fi
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# The simdjson.cpp of the installed libsimdjson-dev's release, from Debian's source package
# (cached under $work/simdjson-<version>). Prints its path.
simdjson_source() {
  local deb_version upstream dir
  deb_version=$(dpkg-query -W -f='${source:Version}' libsimdjson-dev)
  upstream=${deb_version#*:}
  upstream=${upstream%-*}
  dir=$work/simdjson-$upstream
  if [[ ! -f $dir/simdjson.cpp ]]; then
    log "fetching Debian's source of simdjson $deb_version"
    local apt_dir=$work/apt-source
    rm -rf "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/download"
    # The machine's Debian sources, as deb-src entries, in a list of their own (the system's apt
    # configuration is left as it is).
    {
      shopt -s nullglob
      for f in /etc/apt/sources.list.d/*.sources; do
        sed 's/^Types:.*/Types: deb-src/' "$f"
        echo
      done
    } >"$apt_dir/deb-src.sources"
    {
      [[ -f /etc/apt/sources.list ]] && sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list
      for f in /etc/apt/sources.list.d/*.list; do sed -n 's/^deb \(.*\)/deb-src \1/p' "$f"; done
    } >"$apt_dir/deb-src.list"
    local apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/deb-src.list" -o "Dir::Etc::SourceParts=$apt_dir/parts"
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
    mkdir -p "$apt_dir/parts"
    cp "$apt_dir/deb-src.sources" "$apt_dir/parts/"
    apt-get -qq "${apt_opts[@]}" update || log "apt-get update reported errors; trying the download anyway"
    (cd "$apt_dir/download" && apt-get -qq "${apt_opts[@]}" source --download-only "simdjson=$deb_version")
    mkdir -p "$dir"
    tar -xzf "$apt_dir"/download/simdjson_"$upstream".orig.tar.gz -C "$dir" --strip-components=2 \
      "simdjson-$upstream/singleheader/simdjson.cpp" "simdjson-$upstream/singleheader/simdjson.h"
    tar -xzf "$apt_dir"/download/simdjson_"$upstream".orig.tar.gz -C "$dir" --strip-components=1 \
      "simdjson-$upstream/LICENSE"
    rm -rf "$apt_dir"
  fi
  if ! cmp -s "$dir/simdjson.h" /usr/include/simdjson.h; then
    echo "package: $dir/simdjson.h differs from /usr/include/simdjson.h" >&2
    return 1
  fi
  echo "$dir/simdjson.cpp"
}

# --- binaries -----------------------------------------------------------------------
rm -rf "$work/stage" && mkdir -p "$work/stage" "$dist"
# ccache for a new build directory; an existing one keeps its own launcher (a new one would
# rebuild every object).
if [[ -f $build_dir/CMakeCache.txt ]]; then
  unset CMAKE_CXX_COMPILER_LAUNCHER
elif [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]] && command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
targets=()
wants deb && targets+=(cerulean)
if wants nuget || wants npm; then
  simdjson_cpp=$(simdjson_source)
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCERULEAN_PORTABLE=ON \
    -DCERULEAN_SIMDJSON_SOURCE="$simdjson_cpp" >/dev/null
  targets+=(cerulean_portable)
elif [[ ! -f $build_dir/CMakeCache.txt ]]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
log "building ${targets[*]}"
cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"

# Licences of what the binaries link statically, from Debian's copyright files.
notices=$work/stage/THIRD-PARTY-NOTICES.txt
{
  echo "The Cerulean server in this package links these libraries statically."
  debian_library_notices
} >"$notices"
if wants nuget || wants npm; then
  portable_notices=$work/stage/THIRD-PARTY-NOTICES.portable.txt
  {
    cat "$notices"
    printf '\n==================== simdjson ====================\n\n'
    cat "$(dirname "$simdjson_cpp")/LICENSE"
    printf '\n==================== libstdc++ (GCC %s) ====================\n\n' \
      "$(installed_version libstdc++6)"
    echo "GPL-3.0 with the GCC Runtime Library Exception 3.1, which asks nothing of a program it is linked into."
  } >"$portable_notices"
fi

# --- Debian package -----------------------------------------------------------------
if wants deb; then
  if ! command -v dpkg-shlibdeps >/dev/null 2>&1; then
    log "installing dpkg-dev (dpkg-shlibdeps)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev
  fi
# Builds dist/cerulean_<version>_ARCH.deb around the server SERVER (the Debian architecture's
# own; dpkg-shlibdeps finds its libraries among the installed packages of that architecture).
make_deb() {
  local arch=$1 server=$2
  local root=$work/stage/deb-$arch src=packaging/debian
  rm -rf "$root"
  install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/default" \
    "$root/usr/share/doc/cerulean" "$root/usr/share/man/man1" "$root/usr/share/lintian/overrides"
  install -m 0755 "$server" "$root/usr/bin/cerulean"
  local strip_tool=strip
  [[ $arch == arm64 ]] && strip_tool=aarch64-linux-gnu-strip
  if command -v "$strip_tool" >/dev/null 2>&1; then
    "$strip_tool" --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/cerulean"
  else
    log "deb $arch: no $strip_tool; the server goes in as cross.sh built it"
  fi
  install -m 0644 "$src/cerulean.service" "$root/lib/systemd/system/cerulean.service"
  install -m 0644 "$src/cerulean.default" "$root/etc/default/cerulean"
  install -m 0644 "$src/lintian-overrides" "$root/usr/share/lintian/overrides/cerulean"
  gzip -9n <"$src/cerulean.1" >"$root/usr/share/man/man1/cerulean.1.gz"
  chmod 0644 "$root/usr/share/man/man1/cerulean.1.gz"
  {
    cat "$src/copyright"
    echo
    cat "$notices"
  } >"$root/usr/share/doc/cerulean/copyright"
  # One changelog entry for the build, dated by its commit.
  local commit_date commit maintainer script shlib depends installed_size deb
  commit_date=$(git log -1 --format=%cD 2>/dev/null || date -R)
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  maintainer=$(sed -n 's/^Maintainer: //p' "$src/control")
  printf 'cerulean (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
    "$version" "$commit" "$maintainer" "$commit_date" | gzip -9n >"$root/usr/share/doc/cerulean/changelog.gz"
  chmod 0644 "$root/usr/share/doc/cerulean/"*
  for script in postinst prerm postrm; do install -m 0755 "$src/$script" "$root/DEBIAN/$script"; done
  install -m 0644 "$src/conffiles" "$root/DEBIAN/conffiles"

  # Depends from the shared libraries the binary links (dpkg-shlibdeps reads debian/control).
  shlib=$work/stage/shlibdeps-$arch
  mkdir -p "$shlib/debian"
  printf 'Source: cerulean\n\nPackage: cerulean\nArchitecture: any\n' >"$shlib/debian/control"
  depends=$(cd "$shlib" && DEB_HOST_ARCH=$arch dpkg-shlibdeps -O "$root/usr/bin/cerulean" | sed -n 's/^shlibs:Depends=//p')
  [[ -n $depends ]] || { echo "package: dpkg-shlibdeps found no Depends for the $arch server (are the $arch libraries it links installed?)" >&2; return 1; }
  installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends/" -e "s/@INSTALLED_SIZE@/$installed_size/" \
    "$src/control" >"$root/DEBIAN/control"
  (cd "$root" && find usr lib etc -type f ! -path 'etc/*' -exec md5sum {} + | sort -k2) >"$root/DEBIAN/md5sums"
  deb=$dist/cerulean_${version}_$arch.deb
  dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
  log "$(du -h "$deb" | cut -f1) $deb"
}
  rm -f "$dist"/cerulean_*.deb
  make_deb amd64 "$build_dir/cerulean"
  # arm64: the glibc server of scripts/cross.sh linux-arm64, when it was built.
  if [[ -f $cross/linux-arm64/cerulean ]]; then
    make_deb arm64 "$cross/linux-arm64/cerulean"
  else
    log "deb: no $cross/linux-arm64/cerulean, so no arm64 package"
  fi
fi

# --- NuGet package ------------------------------------------------------------------
if wants nuget; then
  command -v dotnet >/dev/null 2>&1 || { echo "package: the .NET SDK (dotnet) is needed for nuget" >&2; exit 1; }
  native=$work/stage/nuget/cerulean
  mkdir -p "$(dirname "$native")"
  strip --strip-unneeded -o "$native" "$build_dir/portable/cerulean"
  export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
  rm -f "$dist"/Cerulean.Testing.*.nupkg
  dotnet pack packaging/nuget/Cerulean.Testing/Cerulean.Testing.csproj -c Release --nologo -v quiet \
    --artifacts-path "$work/nuget-artifacts" -o "$dist" -p:Version="$version" \
    -p:CeruleanBinary="$native" -p:CeruleanNotices="$portable_notices" -p:CeruleanCrossDir="$cross" >/dev/null
  rids=$(unzip -Z1 "$dist/Cerulean.Testing.$version.nupkg" 'runtimes/*' | cut -d/ -f2 | sort -u | tr '\n' ' ')
  log "$(du -h "$dist/Cerulean.Testing.$version.nupkg" | cut -f1) $dist/Cerulean.Testing.$version.nupkg (runtimes: $rids)"
  # The Aspire integration: code only, it runs the server of Cerulean.Testing (a dependency).
  rm -f "$dist"/Cerulean.Aspire.Hosting.*.nupkg
  dotnet pack packaging/nuget/Cerulean.Aspire.Hosting/Cerulean.Aspire.Hosting.csproj -c Release --nologo -v quiet \
    --artifacts-path "$work/nuget-artifacts" -o "$dist" -p:Version="$version" \
    -p:CeruleanBinary="$native" -p:CeruleanNotices="$portable_notices" >/dev/null
  log "$(du -h "$dist/Cerulean.Aspire.Hosting.$version.nupkg" | cut -f1) $dist/Cerulean.Aspire.Hosting.$version.nupkg"
fi

# --- npm packages -------------------------------------------------------------------
# One package per platform whose server exists (packaging/npm/lib/platforms.js: linux-x64 is the
# portable build, the others $cross/TARGET/), then the main package listing exactly those as
# optionalDependencies at its own version.
if wants npm; then
  command -v npm >/dev/null 2>&1 || { echo "package: npm is needed for npm" >&2; exit 1; }
  rm -f "$dist"/cerulean-tables-*.tgz
  packed=()
  while read -r target name executable; do
    if [[ $target == linux-x64 ]]; then
      server=$build_dir/portable/cerulean
    else
      server=$cross/$target/$executable
      [[ -f $server ]] || { log "npm: no $server, so no $name"; continue; }
    fi
    pkg=$work/stage/npm-$target
    mkdir -p "$pkg/bin"
    if [[ $target == linux-x64 ]]; then
      strip --strip-unneeded -o "$pkg/bin/$executable" "$server"
    else
      cp "$server" "$pkg/bin/$executable"
    fi
    chmod 0755 "$pkg/bin/$executable"
    cp packaging/debian/copyright "$pkg/LICENSE"
    target_notices $target >"$pkg/THIRD-PARTY-NOTICES.txt"
    node packaging/npm/lib/platforms.js manifest "$target" "$version" >"$pkg/package.json"
    printf '# %s\n\nThe Cerulean server executable for one platform, installed by the package `cerulean-tables` as an\noptional dependency on that platform only. Use `cerulean-tables`.\n' "$name" >"$pkg/README.md"
    (cd "$pkg" && npm pack --silent --pack-destination "$dist" >/dev/null)
    packed+=("$name")
    tarball=${name#@}
    tarball=$dist/${tarball/\//-}-$version.tgz  # npm pack's name for @scope/name
    log "$(du -h "$tarball" | cut -f1) $tarball"
  done < <(node packaging/npm/lib/platforms.js)

  pkg=$work/stage/npm
  mkdir -p "$pkg/bin" "$pkg/lib"
  cp packaging/npm/package.json packaging/npm/*.js packaging/npm/index.d.ts packaging/npm/README.md "$pkg/"
  cp packaging/debian/copyright "$pkg/LICENSE"
  cp packaging/npm/lib/*.js "$pkg/lib/"
  cp packaging/npm/bin/cerulean.js "$pkg/bin/"
  chmod 0755 "$pkg/bin/cerulean.js"
  (cd "$pkg" && npm pkg set version="$version" >/dev/null)
  node -e '
    const fs = require("node:fs");
    const [file, version, ...names] = process.argv.slice(1);
    const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
    manifest.optionalDependencies = Object.fromEntries(names.map((n) => [n, version]));
    fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");
  ' "$pkg/package.json" "$version" "${packed[@]}"
  (cd "$pkg" && npm pack --silent --pack-destination "$dist" >/dev/null)
  log "$(du -h "$dist/cerulean-tables-$version.tgz" | cut -f1) $dist/cerulean-tables-$version.tgz (${packed[*]})"
fi
