#!/usr/bin/env bash
# Installs dependencies, builds everything and runs every test with CTest. In CI (CI=true) or
# with SANITIZE=1, the suite then runs again built with AddressSanitizer and UBSan; each
# libFuzzer target runs for FUZZ_SECONDS (default 60) from its seed corpus (CI or FUZZ=1); and
# the suite runs against the profile-guided release build the Dockerfile ships (CI or PGO=1).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
jobs="$(nproc)"
# Build trees (plain, sanitizers, fuzzing) and checkouts in other folders share ccache's objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPU_ADMISSION_TESTS=ON
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" "$@")

if [ "${CI:-}" = "true" ] || [ "${SANITIZE:-0}" = "1" ]; then
  echo "--- the same tests under AddressSanitizer + UndefinedBehaviorSanitizer ---"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPU_ADMISSION_SANITIZE=ON -DGPU_ADMISSION_TESTS=ON
  cmake --build build-asan -j"$jobs"
  # The chart test renders YAML with Go and exercises nothing new under the sanitizers; the
  # refmodel differential test runs 72 `check` batches and is slow under them.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$jobs" -LE "chart|refmodel" "$@")
fi

if [ "${CI:-}" = "true" ] || [ "${FUZZ:-0}" = "1" ]; then
  echo "--- fuzzing: each target ${FUZZ_SECONDS:-60} s (libFuzzer, clang-14, ASan + UBSan) ---"
  CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPU_ADMISSION_FUZZ=ON \
    -DGPU_ADMISSION_FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
  cmake --build build-fuzz -j"$jobs"
  (cd build-fuzz && ctest --output-on-failure -j"$jobs" -L fuzz)
fi

if [ "${CI:-}" = "true" ] || [ "${PGO:-0}" = "1" ]; then
  echo "--- the profile-guided release build (scripts/build-pgo.sh, as the Dockerfile builds) and the tests on it ---"
  ./scripts/build-pgo.sh build-pgo -DGPU_ADMISSION_TESTS=ON
  (cd build-pgo && ctest --output-on-failure -j"$jobs" -LE chart "$@")
fi
