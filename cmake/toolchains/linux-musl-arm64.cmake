# Linux aarch64 with musl, fully static (no loader, no shared library), with Zig's clang,
# for scripts/cross.sh linux-musl-arm64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/zig.cmake)
string(APPEND CMAKE_EXE_LINKER_FLAGS_INIT " -static")
