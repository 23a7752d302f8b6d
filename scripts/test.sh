#!/usr/bin/env bash
# Installs dependencies, builds everything and runs every test with CTest.
#
#   scripts/test.sh              # build/ (RelWithDebInfo): the whole suite
#   CI=true scripts/test.sh      # what CI runs (.ci/run), two build trees, each compiled once:
#     1. build-pgo: the profile-guided release build the Dockerfile ships (scripts/build-pgo.sh),
#        the binary only;
#     2. build-sanitize (clang-14, AddressSanitizer + UBSan): the suite under the sanitizers, the
#        tests that drive the binary from outside (refmodel, vap, chart) on build-pgo's release
#        binary, then each libFuzzer target for FUZZ_SECONDS (default 60) from its seeds.
#   PGO=1, SANITIZE=1, FUZZ=1    # add those runs to a local one (PGO=1: build/'s refmodel, vap and
#                                # chart tests run the release binary)
# Extra arguments go to every ctest run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
jobs="$(nproc)"
ci=0
[ "${CI:-}" = "true" ] && ci=1
# Build trees and checkouts in other folders share ccache's objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
stage() { echo "--- $* ($(date -u +%H:%M:%S), ${SECONDS} s in) ---"; }

release_cli=(-DGPU_ADMISSION_CLI_UNDER_TEST=)  # each tree's own binary, unless the release one is built
if [ "$ci" = 1 ] || [ "${PGO:-0}" = "1" ]; then
  stage "build-pgo: the profile-guided release build (scripts/build-pgo.sh), the binary users get"
  PGO_RELEASE_TARGETS=gpu-admission ./scripts/build-pgo.sh build-pgo
  release_cli=(-DGPU_ADMISSION_CLI_UNDER_TEST="$PWD/build-pgo/gpu-admission")
fi
if [ "$ci" = 0 ]; then
  stage "build/ and the whole suite"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPU_ADMISSION_TESTS=ON "${release_cli[@]}"
  cmake --build build -j"$jobs"
  (cd build && ctest --output-on-failure -j"$jobs" "$@")
fi

sanitize=$(( ci || ${SANITIZE:-0} )) fuzz=$(( ci || ${FUZZ:-0} ))
if [ "$sanitize" = 1 ] || [ "$fuzz" = 1 ]; then
  # One clang tree serves both: the libraries are compiled once, with ASan, UBSan (undefined
  # behaviour is fatal) and libFuzzer's coverage hooks; the test executables and the fuzz targets
  # link them.
  stage "build-sanitize: clang-14, AddressSanitizer + UndefinedBehaviorSanitizer, tests and fuzz targets"
  # -O1 and line tables for the reports; simdjson's On-Demand debug checks are on in a sanitizer
  # tree (CMakeLists.txt), as they were in the Debug build this tree replaces.
  CXX=clang++-14 cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DGPU_ADMISSION_SANITIZE=ON \
    -DGPU_ADMISSION_FUZZ=ON -DGPU_ADMISSION_TESTS=ON -DGPU_ADMISSION_FUZZ_SECONDS="${FUZZ_SECONDS:-60}" \
    "${release_cli[@]}"
  cmake --build build-sanitize -j"$jobs"
fi
if [ "$sanitize" = 1 ]; then
  if [ "$ci" = 1 ]; then
    # CI compiles the suite here only: the tests that drive a binary from outside run build-pgo's.
    stage "the suite: under AddressSanitizer + UndefinedBehaviorSanitizer, refmodel, vap and chart on the release binary"
    skip="fuzz"
  else
    # build/ ran the chart, refmodel and backstop tests already; under the sanitizers they are slow
    # (72 check batches, CEL under node) and exercise nothing new.
    stage "the suite under AddressSanitizer + UndefinedBehaviorSanitizer"
    skip="chart|refmodel|fuzz|vap"
  fi
  (cd build-sanitize && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j"$jobs" -LE "$skip" "$@")
fi
if [ "$fuzz" = 1 ]; then
  stage "fuzzing: each target ${FUZZ_SECONDS:-60} s at most (libFuzzer, from its seeds and regressions)"
  (cd build-sanitize && ctest --output-on-failure -j"$jobs" -L fuzz)
fi
stage "done"
