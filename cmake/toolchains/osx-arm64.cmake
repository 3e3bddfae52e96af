# macOS arm64: linked against libSystem only (Zig links its libc++ statically), with Zig's clang,
# for scripts/cross.sh osx-arm64.
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR arm64)
include(${CMAKE_CURRENT_LIST_DIR}/zig.cmake)
