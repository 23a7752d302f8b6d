#!/usr/bin/env bash
# Unpacks Debian 12's arm64 builds of the libraries gpu-admission links (and of Catch2, for the
# tests) into a sysroot folder for the cross build (cmake/aarch64-linux-gnu.cmake). They are
# downloaded with apt (multiarch: `dpkg --add-architecture arm64`) and unpacked, not installed:
# libyaml-cpp-dev, libsimdjson-dev and catch2 cannot be installed for two architectures at once,
# and this machine's amd64 ones stay as they are. glibc and libstdc++ come from the cross compiler's
# packages (libc6-dev-arm64-cross, libstdc++-12-dev-arm64-cross), installed with g++-aarch64-linux-gnu.
#
#   scripts/arm64-sysroot.sh build-release-arm64/sysroot
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "arm64-sysroot: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: scripts/arm64-sysroot.sh SYSROOT_DIR"
sysroot="$1"
packages=(libcpp-httplib-dev libcpp-httplib0.11 libssl-dev libssl3 libyaml-cpp-dev libyaml-cpp0.7 libyaml-dev libyaml-0-2
          libsimdjson-dev libsimdjson14 prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
          libprometheus-cpp-push1.0 libcivetweb-dev libcivetweb1 civetweb libcurl4-openssl-dev libcurl4
          libbrotli-dev libbrotli1 zlib1g-dev zlib1g catch2)
common=(nlohmann-json3-dev)   # Architecture: all
# The list and the packages' versions (apt's candidates) name the sysroot; a change unpacks it anew.
stamp="$(apt-cache policy "${packages[@]/%/:arm64}" "${common[@]}" 2>/dev/null | sed -n 's/^  Candidate: //p' | tr '\n' ' ')"
if [ -f "$sysroot/.packages" ] && [ "$(cat "$sysroot/.packages")" = "${packages[*]} $stamp" ]; then
  exit 0
fi

command -v aarch64-linux-gnu-g++ >/dev/null ||
  die "the cross compiler is missing: apt-get install -y g++-aarch64-linux-gnu"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  [ "$(id -u)" -eq 0 ] || die "apt knows no arm64 packages: run 'dpkg --add-architecture arm64 && apt-get update' as root"
  echo "arm64-sysroot: adding the arm64 architecture to dpkg and apt (nothing is installed for it)" >&2
  dpkg --add-architecture arm64
  apt-get update -q >&2
fi
apt-cache show libsimdjson-dev:arm64 >/dev/null 2>&1 ||
  die "apt has no arm64 package lists: run 'apt-get update' as root"

debs="$(dirname "$sysroot")/debs"
rm -rf "$sysroot" "$debs"
mkdir -p "$sysroot" "$debs"
echo "arm64-sysroot: downloading $((${#packages[@]} + ${#common[@]})) packages" >&2
(cd "$debs" && apt-get download -q "${packages[@]/%/:arm64}" "${common[@]}" >&2) ||
  die "apt-get download failed (network, or an outdated list: apt-get update)"
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
# Absolute symlinks (libfoo.so -> /lib/...) would point into this machine: make them relative.
find "$sysroot" -type l -lname '/*' | while read -r link; do
  target="$(readlink "$link")"
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot$target")" "$link"
done
echo "${packages[*]} $stamp" >"$sysroot/.packages"
echo "arm64-sysroot: $sysroot ($(du -sh "$sysroot" | cut -f1))" >&2
