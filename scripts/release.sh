#!/usr/bin/env bash
# Builds the release of gpu-admission VERSION into dist/ (docs/releases.md):
#   gpu-admission-VERSION-linux-{amd64,arm64}.tar.gz   bin/gpu-admission, lib/ (the shared libraries
#       it needs that are not glibc, found through its NEEDED entries; the binary's RUNPATH is
#       $ORIGIN/../lib, each library's $ORIGIN), LICENSE, README, examples/policy.yaml
#   gpu-admission-CHARTVERSION.tgz                     the Helm chart
#   SHA256SUMS                                         of every file above
# then runs each tarball on a clean root (scripts/verify-release.sh) and builds the multi-arch
# image from the tarballs (Dockerfile.release) with docker buildx, or with buildah (no daemon).
#
#   scripts/release.sh 0.1.0                     # both architectures, amd64 with PGO
#   scripts/release.sh 0.1.0 --arch amd64 --binary build/gpu-admission   # package a build (development)
#   scripts/test-arm64.sh                        # the arm64 build's test suite under qemu
#   scripts/release.sh --verify dist/gpu-admission-0.1.0-linux-arm64.tar.gz
#
# Options:
#   --arch LIST        amd64, arm64 or amd64,arm64 (default)
#   --x86-arch LEVEL   -march of the amd64 build (default x86-64-v2: SSE4.2 and PCLMUL, any x86-64
#                      server since 2010; x86-64-v3 is faster and refuses CPUs before Haswell)
#   --no-pgo           amd64: a plain -O3 build instead of scripts/build-pgo.sh's
#   --binary PATH      package this binary (of the one --arch) instead of building one
#   --image TAG        the image to build (default gpu-admission:VERSION); --push pushes it
#   --no-verify, --no-image, --no-chart
# arm64 is cross-compiled with g++-aarch64-linux-gnu against Debian's arm64 libraries, unpacked
# into build-release-arm64/sysroot by scripts/arm64-sysroot.sh (not installed on this machine).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "release: $*" >&2; exit 1; }
say() { echo "--- release: $* ---" >&2; }

if [ "${1:-}" = "--verify" ]; then
  shift
  [ $# -ge 1 ] || die "usage: scripts/release.sh --verify dist/gpu-admission-VERSION-linux-ARCH.tar.gz..."
  for t in "$@"; do scripts/verify-release.sh "$t"; done
  exit 0
fi

[ $# -ge 1 ] && [[ "$1" != -* ]] || die "usage: scripts/release.sh VERSION [--arch amd64,arm64] [--x86-arch LEVEL] [--no-pgo] [--binary PATH] ..."
version="${1#v}"
shift
archs="amd64,arm64" x86_arch="x86-64-v2" pgo=1 binary="" image="" push=0 verify=1 build_image=1 build_chart=1
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) archs="$2"; shift 2 ;;
    --x86-arch) x86_arch="$2"; shift 2 ;;
    --no-pgo) pgo=0; shift ;;
    --binary) binary="$2"; shift 2 ;;
    --image) image="$2"; shift 2 ;;
    --push) push=1; shift ;;
    --no-verify) verify=0; shift ;;
    --no-image) build_image=0; shift ;;
    --no-chart) build_chart=0; shift ;;
    *) die "unknown option $1" ;;
  esac
done
image="${image:-gpu-admission:$version}"
project_version="$(sed -n 's/^project(gpu-admission VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
[ "$version" = "$project_version" ] ||
  die "VERSION $version is not the project's ($project_version): set project(gpu-admission VERSION $version) in CMakeLists.txt first"
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^" ]*\).*/\1/p' charts/gpu-admission/Chart.yaml)"
[ "$build_chart" = 0 ] || [ "$version" = "$app_version" ] ||
  die "the chart deploys $app_version (appVersion in charts/gpu-admission/Chart.yaml), not $version: set it, and bump the chart's version"
IFS=, read -r -a arch_list <<<"$archs"
for a in "${arch_list[@]}"; do
  case "$a" in amd64 | arm64) ;; *) die "--arch takes amd64 and arm64, not $a" ;; esac
done
[ -z "$binary" ] || [ -x "$binary" ] || die "--binary $binary is not an executable"
[ -z "$binary" ] || [ ${#arch_list[@]} -eq 1 ] || die "--binary packages one architecture: add --arch amd64 or --arch arm64"
# The build's packages (scripts/deps.sh), then the release's own: patchelf for the RUNPATHs, curl
# for the clean-root check, PyYAML for scripts/check-actions.py, the cross compiler and qemu for arm64.
[ -n "$binary" ] || ./scripts/deps.sh
extras=(patchelf curl binutils python3-yaml)
[[ " ${arch_list[*]} " == *" arm64 "* ]] && extras+=(g++-aarch64-linux-gnu qemu-user-static)
missing=()
for p in "${extras[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "missing ${missing[*]}: apt-get install -y ${missing[*]} (as root)"
  echo "release: installing ${missing[*]}" >&2
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
# Reproducible archives: every file dated at the commit, owned by root, in name order.
epoch="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
jobs="${JOBS:-$(nproc)}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
rm -rf dist
mkdir -p dist

# --- builds -----------------------------------------------------------------------------------
build_amd64() { # prints the binary's path
  if [ -n "$binary" ]; then
    echo "$binary"
    return
  fi
  local dir=build-release-amd64
  local args=(-DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_TESTS=OFF -DGPU_ADMISSION_X86_ARCH="$x86_arch"
              -DGPU_ADMISSION_COMMIT="$commit")
  if [ "$pgo" = 1 ]; then
    say "amd64: profile-guided build for $x86_arch in $dir"
    scripts/build-pgo.sh "$dir" "${args[@]}" >&2
  else
    say "amd64: -O3 build for $x86_arch in $dir"
    cmake -S . -B "$dir" "${args[@]}" -DGPU_ADMISSION_PGO=OFF >&2
    cmake --build "$dir" -j"$jobs" --target gpu-admission >&2
  fi
  echo "$dir/gpu-admission"
}

build_arm64() { # prints the binary's path
  local dir=build-release-arm64
  scripts/arm64-sysroot.sh "$dir/sysroot" >&2
  if [ -n "$binary" ]; then
    echo "$binary"
    return
  fi
  say "arm64: cross build in $dir"
  # The tests stay configured (only gpu-admission is built here): scripts/test-arm64.sh builds
  # and runs them in the same tree, under qemu.
  cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
    -DGPU_ADMISSION_SYSROOT="$PWD/$dir/sysroot" -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_COMMIT="$commit" >&2
  cmake --build "$dir" -j"$jobs" --target gpu-admission >&2
  echo "$dir/gpu-admission"
}

# --- packaging ------------------------------------------------------------------------------
# glibc is the one thing left to the machine: every other library the binary names goes into lib/.
is_glibc() {
  case "$1" in
    ld-linux-*.so.* | libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libresolv.so.2 | libutil.so.1 | libmvec.so.1) return 0 ;;
  esac
  return 1
}
needed() { readelf -d -W "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

package() { # package ARCH BINARY
  local arch="$1" bin="$2" name="gpu-admission-$version-linux-$1" libdirs strip=strip
  case "$arch" in
    amd64) libdirs=(/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu) ;;
    arm64) libdirs=("$PWD/build-release-arm64/sysroot/usr/lib/aarch64-linux-gnu"
                    "$PWD/build-release-arm64/sysroot/lib/aarch64-linux-gnu" /usr/aarch64-linux-gnu/lib)
           strip=aarch64-linux-gnu-strip ;;
  esac
  local stage="dist/.stage/$name"
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$stage/examples"
  cp "$bin" "$stage/bin/gpu-admission"
  "$strip" --strip-unneeded "$stage/bin/gpu-admission"
  local queue=("$stage/bin/gpu-admission") file lib dir found
  while [ ${#queue[@]} -gt 0 ]; do
    file="${queue[0]}" && queue=("${queue[@]:1}")
    for lib in $(needed "$file"); do
      is_glibc "$lib" && continue
      [ -e "$stage/lib/$lib" ] && continue
      found=""
      for dir in "${libdirs[@]}"; do [ -e "$dir/$lib" ] && found="$dir/$lib" && break; done
      [ -n "$found" ] || die "$arch: $lib (needed by $(basename "$file")) is in none of ${libdirs[*]}"
      cp -L "$found" "$stage/lib/$lib"
      chmod 0644 "$stage/lib/$lib"
      queue+=("$stage/lib/$lib")
    done
  done
  patchelf --set-rpath '$ORIGIN/../lib' "$stage/bin/gpu-admission"
  for lib in "$stage"/lib/*; do patchelf --set-rpath '$ORIGIN' "$lib"; done
  local glibc
  glibc="$(readelf -V -W "$stage/bin/gpu-admission" "$stage"/lib/* | grep -o 'GLIBC_2\.[0-9.]*' | sort -V | tail -n 1)"
  cp LICENSE "$stage/LICENSE"
  cp examples/policy.yaml "$stage/examples/policy.yaml"
  write_readme "$arch" "${glibc#GLIBC_}" "$(cd "$stage/lib" && ls | paste -sd ' ')" "$stage/bin/gpu-admission" >"$stage/README"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C dist/.stage -cf - "$name" |
    gzip -n -9 >"dist/$name.tar.gz"
  echo "dist/$name.tar.gz: $(du -h "dist/$name.tar.gz" | cut -f1), needs glibc ${glibc#GLIBC_}, bundles $(ls "$stage/lib" | wc -l) libraries" >&2
}

write_readme() { # write_readme ARCH GLIBC LIBS BINARY
  local cpu="any arm64 (ARMv8-A) CPU, e.g. NVIDIA Grace" level
  if [ "$1" = amd64 ]; then
    level="$("$4" version | sed -n 's/^ *arch: *//p')"
    cpu="an x86-64 CPU with $level and PCLMUL (it refuses to start on an older one and says so)"
    [ "$level" = default ] && cpu="any x86-64 CPU"
  fi
  cat <<EOF
gpu-admission $version (linux-$1, commit $commit)

A Kubernetes validating and mutating admission webhook for shared GPU clusters, and the tools
around it: check (dry runs of manifests), test (policy test suites), audit, policy lint, certs.

Runs on Linux with glibc $2 or newer and $cpu.
Nothing else is needed: lib/ holds the other shared libraries it uses, found through the
binary's RUNPATH (\$ORIGIN/../lib), so keep bin/ and lib/ side by side:
$(fold -s -w 92 <<<"$3" | sed 's/ *$//; s/^/  /')

  bin/gpu-admission version
  bin/gpu-admission policy lint examples/policy.yaml
  bin/gpu-admission check --policy examples/policy.yaml pod.yaml
  bin/gpu-admission serve --policy examples/policy.yaml --tls-cert tls.crt --tls-key tls.key

Documentation: README.md and docs/ of the source repository (docs/releases.md for this archive).
License: Apache-2.0 (LICENSE).
EOF
}

# --- the chart --------------------------------------------------------------------------------
package_chart() {
  local chart_version
  chart_version="$(sed -n 's/^version: *\([^ ]*\).*/\1/p' charts/gpu-admission/Chart.yaml)"
  if command -v helm >/dev/null; then
    helm package charts/gpu-admission --destination dist >&2
  else
    # What `helm package` writes: CHART-VERSION.tgz holding CHART/ with the chart's files.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --exclude-vcs \
      --exclude='*.swp' --exclude='*.bak' --exclude='*.tmp' --exclude='*.orig' --exclude='*~' \
      --exclude=.DS_Store --exclude=.idea --exclude=.vscode -C charts -cf - gpu-admission | gzip -n -9 >"dist/gpu-admission-$chart_version.tgz"
    echo "helm is not installed: dist/gpu-admission-$chart_version.tgz is a tar.gz of charts/gpu-admission in helm's layout" >&2
  fi
}

# --- the image --------------------------------------------------------------------------------
# docker buildx when it has a daemon, else buildah (no daemon: apt-get install buildah), else the
# command to run elsewhere. Either builds every platform here without emulation.
docker_usable() {
  command -v docker >/dev/null && docker buildx version >/dev/null 2>&1 && docker info >/dev/null 2>&1
}

# buildah 1.28 (Debian 12's) leaves BUILDPLATFORM unset, so it is given. Several platforms make a
# manifest list named $image, from nothing (--manifest adds to a list that exists); one platform, a
# plain image. Isolation is chroot unless BUILDAH_ISOLATION says otherwise: the one RUN unpacks a
# tarball, and chroot works in containers and CI runners where buildah's runtime cannot make its
# cgroups. STORAGE_DRIVER=vfs where overlay mounts fail.
build_image_buildah() { # build_image_buildah PLATFORMS
  local cmd=(buildah build -f Dockerfile.release --platform "$1" --build-arg "VERSION=$version"
             --build-arg "BUILDPLATFORM=$(buildah info --format '{{.host.os}}/{{.host.arch}}')")
  if [ ${#arch_list[@]} -gt 1 ]; then
    if buildah manifest exists "$image" 2>/dev/null; then buildah manifest rm "$image" >&2
    elif buildah inspect --type image "$image" >/dev/null 2>&1; then buildah rmi "$image" >&2; fi
    cmd+=(--manifest "$image")
  else
    cmd+=(-t "$image")
  fi
  say "image $image for $1 with buildah (isolation ${BUILDAH_ISOLATION:-chroot})"
  BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}" "${cmd[@]}" dist >&2 ||
    die "buildah could not build $image: see \"The image without docker\" in docs/releases.md"
  [ "$push" = 1 ] || return 0
  say "pushing $image"
  if [ ${#arch_list[@]} -gt 1 ]; then
    buildah manifest push --all "$image" "docker://$image" >&2
  else
    buildah push "$image" "docker://$image" >&2
  fi
}

build_image() {
  local platforms=() a
  for a in "${arch_list[@]}"; do platforms+=("linux/$a"); done
  local platform_list
  platform_list="$(IFS=,; echo "${platforms[*]}")"
  local cmd=(docker buildx build -f Dockerfile.release --platform "$platform_list" --build-arg "VERSION=$version"
             -t "$image")
  if [ "$push" = 1 ]; then cmd+=(--push); elif [ ${#platforms[@]} -eq 1 ]; then cmd+=(--load); fi
  cmd+=(dist)
  if docker_usable; then
    say "image $image for $platform_list"
    "${cmd[@]}" >&2
  elif command -v buildah >/dev/null; then
    build_image_buildah "$platform_list"
  else
    echo "release: neither docker buildx with a running daemon nor buildah is here; skipped the image. Build it with:" >&2
    echo "  ${cmd[*]}" >&2
    echo "or install buildah (apt-get install -y buildah), which needs no daemon, and run release.sh again." >&2
  fi
}

# --- the release ------------------------------------------------------------------------------
for a in "${arch_list[@]}"; do
  if [ "$a" = amd64 ]; then bin="$(build_amd64)"; else bin="$(build_arm64)"; fi
  say "$a: packaging $bin"
  package "$a" "$bin"
done
rm -rf dist/.stage
[ "$build_chart" = 1 ] && package_chart
(cd dist && sha256sum -- * >SHA256SUMS)
cat dist/SHA256SUMS >&2
if [ "$verify" = 1 ]; then
  for a in "${arch_list[@]}"; do
    say "verifying linux-$a on a clean root"
    scripts/verify-release.sh "dist/gpu-admission-$version-linux-$a.tar.gz"
  done
fi
if [ "$verify" = 1 ] && command -v python3 >/dev/null; then
  say "the workflows, and the action installing from dist/"
  scripts/check-actions.py dist
fi
[ "$build_image" = 1 ] && build_image
say "done: $(cd dist && ls | tr '\n' ' ')"
