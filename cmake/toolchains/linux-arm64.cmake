# Linux arm64 (glibc) with Debian's aarch64 GCC and the :arm64 -dev packages (multiarch), for
# scripts/cross.sh linux-arm64. CERULEAN_CROSS_PREFIX: the folder holding what Debian has no
# arm64 package for beside the amd64 one (simdjson).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CERULEAN_CROSS_PREFIX)
set(CMAKE_FIND_ROOT_PATH ${CERULEAN_CROSS_PREFIX} /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
