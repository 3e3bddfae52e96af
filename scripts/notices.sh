# Sourced by scripts/package.sh and scripts/cross.sh: the licence texts of the libraries every
# build of the server links statically (OpenSSL, SQLite, expat and Boost), from the installed
# Debian packages' copyright files.

# The installed version of package $1 (one line: Multi-Arch copies, :amd64 and :arm64, share it).
installed_version() { dpkg-query -W -f='${Version}\n' "$1" | sed -n 1p; }

# Prints them, each under a heading naming the package and its version.
debian_library_notices() {
  local pkg
  for pkg in libssl3 libsqlite3-0 libexpat1; do
    printf '\n==================== Debian package %s %s ====================\n\n' "$pkg" \
      "$(installed_version "$pkg")"
    cat "/usr/share/doc/$pkg/copyright"
  done
  printf '\n==================== Boost %s (URL, ProgramOptions, Asio, Beast) ====================\n\n' \
    "$(installed_version libboost-url1.81.0)"
  # The licence's own text, from Debian's (very long) copyright file of Boost.
  awk 'prev == "License: BSL-1.0" && /Boost Software License - Version 1.0/ { p = 1; print prev }
       p { print } p && /^$/ { exit } { prev = $0 }' /usr/share/doc/libboost-url1.81.0/copyright
}
