#!/usr/bin/env bash
# Builds gpu-admission with profile-guided optimisation in one build tree (default build-pgo/):
#   1. an instrumented build of the microbenchmark (GPU_ADMISSION_PGO=GENERATE);
#   2. training: the benchmark runs every review it has (/validate and /mutate of the training
#      pod, the 36 KB pod, a Deployment, the large policy, the DRA pod with claims from cluster
#      state, hide-gpus on every container) and the cluster-state lookups, writing the profile;
#   3. the release build laid out by that profile (GPU_ADMISSION_PGO=USE): gpu-admission, and the
#      benchmark and stand-in API server bench/load.sh runs.
# On the request path this is worth ~10% requests/s at one core (bench/README.md, "Where the time goes").
# Extra arguments go to both cmake configure steps (e.g. -DGPU_ADMISSION_TESTS=ON);
# PGO_RELEASE_TARGETS limits the release build to those targets (CI: gpu-admission).
#
#   scripts/build-pgo.sh                 # build-pgo/gpu-admission
#   scripts/build-pgo.sh build-bench     # the tree bench/load.sh uses
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-pgo}"
[ $# -gt 0 ] && shift
jobs="$(nproc)"
profile="$(mkdir -p "$build" && cd "$build" && pwd)/pgo-profile"
# The benchmark's training set: single-threaded cases only (the profile counters of threaded
# runs would race; prefer-atomic makes them atomic where it can, this avoids the question).
training='Validate|Mutate|ClaimLookupHit/threads:1$|ClaimLookupMiss|NamespaceLabels'

echo "--- build-pgo: instrumented build in $build ---" >&2
rm -rf "$profile"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_TESTS=OFF -DGPU_ADMISSION_BENCH=ON \
  -DGPU_ADMISSION_PGO=GENERATE -DGPU_ADMISSION_PGO_DIR="$profile" "$@" >/dev/null
cmake --build "$build" -j"$jobs" --target gpu-admission-bench

echo "--- build-pgo: training (the benchmark's reviews) ---" >&2
if ! "$build/bench/gpu-admission-bench" --benchmark_filter="$training" --benchmark_min_time=0.05 \
  >"$build/pgo-training.log" 2>&1; then
  tail -n 20 "$build/pgo-training.log" >&2
  echo "build-pgo: the training run failed (log: $build/pgo-training.log)" >&2
  exit 1
fi
if grep -q "ERROR OCCURRED" "$build/pgo-training.log"; then
  grep "ERROR OCCURRED" "$build/pgo-training.log" >&2
  echo "build-pgo: a training case reported an error: a profile of error paths is not one to build with" >&2
  exit 1
fi
count="$(find "$profile" -name '*.gcda' | wc -l)"
if [ "$count" -eq 0 ]; then
  echo "build-pgo: the training wrote no profile into $profile" >&2
  exit 1
fi
echo "build-pgo: profile of $count objects in $profile" >&2

echo "--- build-pgo: optimised build ---" >&2
cmake -S . -B "$build" -DGPU_ADMISSION_PGO=USE "$@" >/dev/null
targets=()
for t in ${PGO_RELEASE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"$jobs" "${targets[@]}"
"$build/gpu-admission" version
