#!/usr/bin/env bash
# The test suite of the arm64 build, cross-compiled (cmake/aarch64-linux-gnu.cmake) and run here
# under qemu-aarch64-static: policy_tests, webhook_tests and certs_tests, each a single process
# running all its cases (a process per case, as ctest runs them, costs qemu's start-up each time).
# The tests that start the CLI start the arm64 gpu-admission through qemu as well.
#
#   scripts/test-arm64.sh                      # every case of the three executables
#   scripts/test-arm64.sh webhook_tests '[cli]'   # one executable, with a Catch2 test spec
#
# Builds in build-release-arm64 (the tree scripts/release.sh builds the arm64 release in).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "test-arm64: $*" >&2; exit 1; }
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  command -v "$tool" >/dev/null ||
    die "$tool is missing: apt-get install -y g++-aarch64-linux-gnu qemu-user-static"
done
dir=build-release-arm64
jobs="${JOBS:-$(nproc)}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
scripts/arm64-sysroot.sh "$dir/sysroot"
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DGPU_ADMISSION_SYSROOT="$PWD/$dir/sysroot" -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_TESTS=ON >/dev/null

if [ $# -gt 0 ]; then
  executables=("$1")
  shift
else
  executables=(policy_tests webhook_tests certs_tests)
fi
cmake --build "$dir" -j"$jobs" --target gpu-admission "${executables[@]}"

# The emulator command line the toolchain file chose (qemu, glibc of the cross compiler, the
# sysroot's libraries), as CMake wrote it for the CLI wrapper.
wrapper="$dir/gpu-admission-emulated"
[ -x "$wrapper" ] || die "$wrapper is missing: the tree was not configured with qemu-aarch64-static installed"
read -r -a emulator < <(sed -n "s/^exec \(.*\) '[^']*gpu-admission' \"\$@\"\$/\1/p" "$wrapper" | tr -d "'")
[ ${#emulator[@]} -gt 0 ] || die "could not read the emulator command from $wrapper"

rc=0
for exe in "${executables[@]}"; do
  echo "--- test-arm64: $exe under qemu-aarch64 ---"
  start=$SECONDS code=0
  "${emulator[@]}" "$dir/test/$exe" --reporter console "$@" || code=$?
  echo "--- test-arm64: $exe: exit $code, $((SECONDS - start)) s ---"
  [ "$code" -eq 0 ] || rc=$code
done
exit "$rc"
