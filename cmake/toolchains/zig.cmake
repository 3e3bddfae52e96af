# The targets scripts/cross.sh builds with Zig's clang (linux-musl-x64, linux-musl-arm64,
# osx-arm64, osx-x64), included by their toolchain files after they set CMAKE_SYSTEM_NAME and
# CMAKE_SYSTEM_PROCESSOR. CERULEAN_CROSS_PREFIX: the folder holding the target's libraries; its
# sibling bin/ holds the script's wrappers (cc, c++, ar, ranlib: `zig cc -target ...`).
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CERULEAN_CROSS_PREFIX)
get_filename_component(_cerulean_zig_tools "${CERULEAN_CROSS_PREFIX}/../bin" ABSOLUTE)
set(CMAKE_C_COMPILER ${_cerulean_zig_tools}/cc)
set(CMAKE_CXX_COMPILER ${_cerulean_zig_tools}/c++)
set(CMAKE_AR ${_cerulean_zig_tools}/ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${_cerulean_zig_tools}/ranlib CACHE FILEPATH "")
set(CMAKE_FIND_ROOT_PATH ${CERULEAN_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Stripped at link time (the toolchain has no strip of its own for Mach-O).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-s")
