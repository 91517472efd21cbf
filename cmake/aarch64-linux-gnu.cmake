# Cross-build for aarch64 Linux with Debian's crossbuild-essential-arm64 and the arm64 multiarch -dev
# packages (scripts/cross-test installs them). Shaders are still compiled by the host's glslc.
# Tests run through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so ctest works as on the host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian multiarch: libraries and CMake packages under /usr/lib/aarch64-linux-gnu, headers shared.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# pkg-config (PCRE2, ICU) must read the arm64 .pc files only, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
