#!/usr/bin/env python3
"""Checks a macOS build of the server without a Mac (scripts/cross.sh osx-arm64 | osx-x64).

    python3 tests/platforms/macho_check.py ARCH BINARY      # ARCH: arm64 or x86_64

Reads the Mach-O file and checks what can be checked here: a 64-bit little-endian executable of
ARCH (not a fat file), position-independent, with an entry point (LC_MAIN), built for macOS
(LC_BUILD_VERSION platform 1) with a minimum version it states, linked against no dynamic
library but the OS's own /usr/lib/libSystem.B.dylib and /usr/lib/libc++*.dylib, and, for arm64,
signed (an LC_CODE_SIGNATURE: macOS on Apple silicon kills an unsigned executable). Running it
needs a Mac; nothing here claims it runs.
Prints one PASS or FAIL line per check and "N passed, N failed"; exit status 1 iff one failed.
"""

import struct
import sys

MH_MAGIC_64 = 0xFEEDFACF
CPU_TYPES = {"arm64": 0x0100000C, "x86_64": 0x01000007}
MH_EXECUTE = 2
MH_PIE = 0x200000
LC_LOAD_DYLIB_KINDS = {0xC, 0x80000018, 0x8000001F, 0x20, 0x80000023}
LC_MAIN = 0x80000028
LC_BUILD_VERSION = 0x32
LC_CODE_SIGNATURE = 0x1D
PLATFORM_MACOS = 1
SYSTEM_LIBRARIES = ("/usr/lib/libSystem.B.dylib", "/usr/lib/libc++.1.dylib", "/usr/lib/libc++abi.dylib")


def load_commands(data, ncmds):
    offset = 32  # sizeof(mach_header_64)
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        if size < 8 or offset + size > len(data):
            raise ValueError(f"load command at {offset} overruns the file")
        yield cmd, data[offset:offset + size]
        offset += size


def version(packed):
    return f"{packed >> 16}.{(packed >> 8) & 0xFF}.{packed & 0xFF}"


def main(argv):
    if len(argv) != 3 or argv[1] not in CPU_TYPES:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    arch, path = argv[1], argv[2]
    data = open(path, "rb").read()
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}{' — ' + detail if detail else ''}")

    magic = struct.unpack_from("<I", data, 0)[0] if len(data) >= 32 else 0
    check("64-bit little-endian Mach-O", magic == MH_MAGIC_64, f"magic {magic:#x}")
    if magic != MH_MAGIC_64:
        print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
        return 1
    _, cputype, _, filetype, ncmds, _, flags, _ = struct.unpack_from("<IiiIIIII", data, 0)
    check(f"architecture {arch}", cputype == CPU_TYPES[arch], f"cputype {cputype:#x}")
    check("an executable", filetype == MH_EXECUTE, f"filetype {filetype}")
    check("position-independent (MH_PIE)", bool(flags & MH_PIE))

    libraries, entry, build, signed = [], False, None, False
    for cmd, body in load_commands(data, ncmds):
        if cmd in LC_LOAD_DYLIB_KINDS:
            name_offset = struct.unpack_from("<I", body, 8)[0]
            libraries.append(body[name_offset:].split(b"\0", 1)[0].decode())
        elif cmd == LC_MAIN:
            entry = True
        elif cmd == LC_BUILD_VERSION:
            build = struct.unpack_from("<III", body, 8)  # platform, minos, sdk
        elif cmd == LC_CODE_SIGNATURE:
            signed = True
    check("an entry point (LC_MAIN)", entry)
    check("built for macOS", build is not None and build[0] == PLATFORM_MACOS,
          f"minimum macOS {version(build[1])}" if build else "no LC_BUILD_VERSION")
    foreign = [lib for lib in libraries if lib not in SYSTEM_LIBRARIES]
    check("links only the OS's libSystem and libc++", bool(libraries) and not foreign,
          ", ".join(libraries) if libraries else "no dynamic library at all")
    if arch == "arm64":
        check("signed (LC_CODE_SIGNATURE)", signed)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
