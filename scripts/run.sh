#!/usr/bin/env bash
# Installs dependencies, builds gpu-admission and runs the main job: the webhook on the built-in
# default policy with a self-signed certificate (HTTPS on :8443, metrics on :9090), after a dry
# run of the example manifests against the example policy. Extra arguments go to
# `gpu-admission serve` (e.g. --policy examples/policy.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo  # same cache as scripts/test.sh
cmake --build build -j"$(nproc)" --target gpu-admission
echo "--- gpu-admission check --policy examples/policy.yaml examples/manifests (exit 1: some are denied, as intended) ---" >&2
./build/gpu-admission check --policy examples/policy.yaml examples/manifests/ || true
echo "--- gpu-admission serve ---" >&2
exec ./build/gpu-admission serve "$@"
