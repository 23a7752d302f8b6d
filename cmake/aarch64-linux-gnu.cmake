# Cross build for arm64 (aarch64) Linux with Debian's g++-aarch64-linux-gnu, against Debian 12's
# arm64 libraries unpacked into GPU_ADMISSION_SYSROOT by scripts/arm64-sysroot.sh; glibc and
# libstdc++ are the cross compiler's own (/usr/aarch64-linux-gnu). scripts/release.sh uses it:
#
#   scripts/arm64-sysroot.sh build-arm64/sysroot
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#     -DGPU_ADMISSION_SYSROOT=$PWD/build-arm64/sysroot
#
# Tests and the CLI run under qemu-aarch64-static when it is installed (CMAKE_CROSSCOMPILING_EMULATOR),
# so that Catch2's test discovery and ctest work on an x86 machine.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# try_compile projects read this file again: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GPU_ADMISSION_SYSROOT)
if(NOT GPU_ADMISSION_SYSROOT AND DEFINED ENV{GPU_ADMISSION_SYSROOT})
  set(GPU_ADMISSION_SYSROOT "$ENV{GPU_ADMISSION_SYSROOT}")
endif()
if(NOT GPU_ADMISSION_SYSROOT OR NOT EXISTS "${GPU_ADMISSION_SYSROOT}/usr/include/simdjson.h")
  message(FATAL_ERROR "GPU_ADMISSION_SYSROOT='${GPU_ADMISSION_SYSROOT}' holds no arm64 libraries: "
                      "run scripts/arm64-sysroot.sh DIR and pass -DGPU_ADMISSION_SYSROOT=DIR (an absolute path)")
endif()
set(ENV{GPU_ADMISSION_SYSROOT} "${GPU_ADMISSION_SYSROOT}")

set(cross_libdirs "${GPU_ADMISSION_SYSROOT}/usr/lib/aarch64-linux-gnu" "${GPU_ADMISSION_SYSROOT}/lib/aarch64-linux-gnu")
# Headers of the unpacked packages before /usr/include, which the cross compiler also searches
# (this machine's amd64 headers). The libraries' own dependencies are resolved at link time
# through -rpath-link.
set(CMAKE_CXX_FLAGS_INIT "-isystem ${GPU_ADMISSION_SYSROOT}/usr/include/aarch64-linux-gnu -isystem ${GPU_ADMISSION_SYSROOT}/usr/include")
string(JOIN ":" cross_rpath_link ${cross_libdirs})
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${cross_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${cross_rpath_link}")

set(CMAKE_FIND_ROOT_PATH "${GPU_ADMISSION_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (cpp-httplib) reads the sysroot's .pc files and prefixes their paths with it.
set(ENV{PKG_CONFIG_LIBDIR} "${GPU_ADMISSION_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${GPU_ADMISSION_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${GPU_ADMISSION_SYSROOT}")

find_program(GPU_ADMISSION_QEMU qemu-aarch64-static)
if(GPU_ADMISSION_QEMU)
  string(JOIN ":" cross_library_path ${cross_libdirs})
  set(CMAKE_CROSSCOMPILING_EMULATOR "${GPU_ADMISSION_QEMU};-L;/usr/aarch64-linux-gnu;-E;LD_LIBRARY_PATH=${cross_library_path}")
endif()
