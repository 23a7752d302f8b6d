#!/usr/bin/env bash
# Installs a released gpu-admission for this machine's architecture (linux amd64 or arm64): downloads
# the tarball and SHA256SUMS of the release, checks the tarball against them, unpacks it and puts its
# bin/ on PATH. The GitHub Action (action.yml at the repository root) runs it; it works anywhere.
#
#   GPU_ADMISSION_REPOSITORY=OWNER/gpu-admission scripts/install-release.sh [VERSION|latest]
#
# Environment:
#   GPU_ADMISSION_REPOSITORY     OWNER/NAME whose GitHub releases to use
#   GPU_ADMISSION_DOWNLOAD_URL   where the release's files are instead (a release's assets folder,
#                                e.g. file://$PWD/dist after scripts/release.sh); "latest" is then
#                                the version of the tarballs there
#   GPU_ADMISSION_INSTALL_DIR    where to unpack (default: $RUNNER_TOOL_CACHE/gpu-admission, or
#                                ~/.local/gpu-admission), one folder per version and architecture
# In GitHub Actions, bin/ is added to $GITHUB_PATH and the version and folder to $GITHUB_OUTPUT.
set -euo pipefail

die() { echo "install-release: $*" >&2; exit 1; }
requested="${1:-latest}"
requested="${requested#v}"
[ "$(uname -s)" = Linux ] || die "releases are built for Linux, not $(uname -s)"
case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no release for $(uname -m): build from source (docs/ci.md, \"Getting the binary\")" ;;
esac
for tool in curl sha256sum tar; do
  command -v "$tool" >/dev/null || die "$tool is missing: install it (Debian/Ubuntu: apt-get install -y curl coreutils tar)"
done

# Where the files of the release are: a local or mirrored folder, or the GitHub release of the tag.
if [ -n "${GPU_ADMISSION_DOWNLOAD_URL:-}" ]; then
  base="${GPU_ADMISSION_DOWNLOAD_URL%/}"
  latest_base="$base"
else
  repo="${GPU_ADMISSION_REPOSITORY:-}"
  [[ "$repo" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] ||
    die "GPU_ADMISSION_REPOSITORY='$repo' is not OWNER/NAME (the action's 'repository' input)"
  base="https://github.com/$repo/releases/download/v$requested"
  latest_base="https://github.com/$repo/releases/latest/download"
fi
fetch() { curl -fsSL --retry 3 --retry-delay 2 -o "$2" "$1" || die "could not download $1"; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ "$requested" = latest ]; then
  fetch "$latest_base/SHA256SUMS" "$work/SHA256SUMS"
  version="$(sed -n "s/^[0-9a-f]\{64\}  gpu-admission-\(.*\)-linux-$arch\.tar\.gz\$/\1/p" "$work/SHA256SUMS" | head -n 1)"
  [ -n "$version" ] || die "the latest release lists no linux-$arch tarball in its SHA256SUMS"
  [ -z "${GPU_ADMISSION_DOWNLOAD_URL:-}" ] && base="https://github.com/$repo/releases/download/v$version"
else
  [[ "$requested" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] ||
    die "version '$requested' is not a release version such as 0.1.0 (or latest)"
  version="$requested"
  fetch "$base/SHA256SUMS" "$work/SHA256SUMS"
fi
name="gpu-admission-$version-linux-$arch"
fetch "$base/$name.tar.gz" "$work/$name.tar.gz"
grep -q "  $name.tar.gz\$" "$work/SHA256SUMS" || die "SHA256SUMS of $version does not list $name.tar.gz"
(cd "$work" && grep "  $name.tar.gz\$" SHA256SUMS | sha256sum -c --quiet -) ||
  die "$name.tar.gz does not match its SHA256SUMS entry: a damaged or altered download"

# The tarball's README names the oldest glibc it runs with (it bundles every other library).
needs="$(tar -xzOf "$work/$name.tar.gz" "$name/README" | sed -n 's/.*glibc \([0-9.]*\) or newer.*/\1/p')"
have="$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')"
if [ -n "$needs" ] && [ -n "$have" ] && [ "$(printf '%s\n' "$needs" "$have" | sort -V | head -n 1)" != "$needs" ]; then
  die "gpu-admission $version needs glibc $needs or newer, this machine has $have: use a newer system (Debian 12, Ubuntu 24.04: runs-on: ubuntu-24.04) or the container image"
fi

root="${GPU_ADMISSION_INSTALL_DIR:-${RUNNER_TOOL_CACHE:-$HOME/.local}/gpu-admission}"
dest="$root/$version/$arch"
rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$work/$name.tar.gz" -C "$dest" --strip-components=1
"$dest/bin/gpu-admission" version >&2 || die "the installed $dest/bin/gpu-admission does not run here"
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$dest/bin" >>"$GITHUB_PATH"
else
  echo "install-release: add it to PATH: export PATH=\"$dest/bin:\$PATH\"" >&2
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "version=$version"; echo "path=$dest"; } >>"$GITHUB_OUTPUT"
fi
echo "install-release: gpu-admission $version (linux-$arch) in $dest" >&2
