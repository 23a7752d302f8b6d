#!/usr/bin/env bash
# Installs the Debian 12 packages gpu-admission needs to build and test (as root, or via sudo).
set -euo pipefail
packages=(cmake g++ make ccache pkg-config libcpp-httplib-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libyaml-dev
          libsimdjson-dev prometheus-cpp-dev catch2 libbenchmark-dev openssl wrk python3
          clang-14 libclang-rt-14-dev
          golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev prometheus)
# Node.js and npm run the CEL engine of test/vap and test/chart. A machine that already has them
# (NodeSource's nodejs bundles npm and conflicts with Debian's npm package) keeps its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
