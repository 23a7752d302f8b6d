#!/usr/bin/env bash
# Installs dependencies, builds everything and runs every test with CTest. In CI (CI=true) or
# with SANITIZE=1, the suite then runs again built with AddressSanitizer and UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPU_ADMISSION_TESTS=ON
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" "$@")

if [ "${CI:-}" = "true" ] || [ "${SANITIZE:-0}" = "1" ]; then
  echo "--- the same tests under AddressSanitizer + UndefinedBehaviorSanitizer ---"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPU_ADMISSION_SANITIZE=ON -DGPU_ADMISSION_TESTS=ON
  cmake --build build-asan -j"$jobs"
  # The chart test renders YAML with Go and exercises nothing new under the sanitizers.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$jobs" -LE chart "$@")
fi
