#!/usr/bin/env bash
# Runs a release tarball on a clean root: a temporary folder holding only glibc's runtime files
# (the dynamic loader, libc, libm and whatever else of glibc the binary or its bundled libraries
# name) and the extracted tarball; no compiler, no -dev package, no libstdc++ but the bundled one.
# Inside it, through chroot (and qemu-aarch64-static for an arm64 tarball on another machine):
#   version, check of an allowed and a denied example manifest, policy lint of the example policy,
#   certs, and serve for a moment, with /readyz and a /validate review asked from outside over TLS
#   verified against the generated CA.
#
#   scripts/verify-release.sh dist/gpu-admission-0.1.0-linux-amd64.tar.gz
#
# Needs root (chroot), curl, readelf; for arm64 on x86 also qemu-user-static. GLIBC_DIR overrides
# where glibc's files come from (default: this machine's, /usr/aarch64-linux-gnu/lib for arm64).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "verify-release: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: scripts/verify-release.sh dist/gpu-admission-VERSION-linux-ARCH.tar.gz"
tarball="$1"
[ -f "$tarball" ] || die "no tarball at $tarball (scripts/release.sh VERSION builds one)"
name="$(basename "$tarball" .tar.gz)"
[[ "$name" =~ ^gpu-admission-(.+)-linux-(amd64|arm64)$ ]] ||
  die "$tarball is not named gpu-admission-VERSION-linux-{amd64,arm64}.tar.gz"
version="${BASH_REMATCH[1]}" arch="${BASH_REMATCH[2]}"
[ "$(id -u)" -eq 0 ] || die "chroot needs root: run it as root (or with sudo)"
for tool in curl readelf chroot; do
  command -v "$tool" >/dev/null || die "$tool is missing: apt-get install -y curl binutils coreutils"
done

case "$arch" in
  amd64) triplet=x86_64-linux-gnu loader=/lib64/ld-linux-x86-64.so.2 default_glibc=/lib/x86_64-linux-gnu
         native_machine=x86_64 ;;
  arm64) triplet=aarch64-linux-gnu loader=/lib/ld-linux-aarch64.so.1 default_glibc=/usr/aarch64-linux-gnu/lib
         native_machine=aarch64 ;;
esac
glibc_dir="${GLIBC_DIR:-$default_glibc}"
[ -f "$glibc_dir/libc.so.6" ] ||
  die "no $arch glibc in $glibc_dir (arm64: apt-get install -y libc6-arm64-cross, or set GLIBC_DIR)"
emulator=()
if [ "$(uname -m)" != "$native_machine" ]; then
  qemu="$(command -v "qemu-$native_machine-static" || true)"
  [ -n "$qemu" ] || die "an $arch tarball on $(uname -m) runs under qemu-$native_machine-static: apt-get install -y qemu-user-static"
  emulator=(/usr/bin/qemu-static)
fi

root="$(mktemp -d /tmp/gpu-admission-verify.XXXXXX)"
serve_pid=""
cleanup() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then kill "$serve_pid" 2>/dev/null || true; fi
  if mountpoint -q "$root/proc"; then umount "$root/proc"; fi
  if ! mountpoint -q "$root/proc"; then rm -rf "$root"; fi
}
trap cleanup EXIT

# --- the root: the tarball, then the glibc files it names and nothing else -----------------------
mkdir -p "$root/opt" "$root/tmp" "$root/work" "$root/proc" "$root/lib/$triplet" "$root$(dirname "$loader")"
chmod 1777 "$root/tmp"
# /proc, as on any Linux machine: the loader resolves the RUNPATH's $ORIGIN through /proc/self/exe.
mount -t proc proc "$root/proc" || die "could not mount /proc in $root (a container needs CAP_SYS_ADMIN)"
tar -xzf "$tarball" -C "$root/opt"
top="/opt/$name"
[ -x "$root$top/bin/gpu-admission" ] || die "$tarball has no $name/bin/gpu-admission"
glibc_libs=(libc.so.6 libm.so.6)
while read -r needed; do
  [ -e "$root$top/lib/$needed" ] && continue
  case "$needed" in
    ld-linux-*.so.*) ;;
    libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libresolv.so.2 | libutil.so.1 | libmvec.so.1)
      glibc_libs+=("$needed") ;;
    *) die "$needed is needed but neither bundled in lib/ nor part of glibc" ;;
  esac
done < <(readelf -d -W "$root$top/bin/gpu-admission" "$root$top"/lib/*.so* 2>/dev/null |
           sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
cp -L "$glibc_dir/$(basename "$loader")" "$root$loader"
for lib in $(printf '%s\n' "${glibc_libs[@]}" | sort -u); do
  cp -L "$glibc_dir/$lib" "$root/lib/$triplet/$lib"
done
if [ ${#emulator[@]} -gt 0 ]; then
  mkdir -p "$root/usr/bin" && cp "$qemu" "$root/usr/bin/qemu-static"
fi
cp examples/manifests/training-pod.yaml examples/manifests/privileged-pod.yaml "$root/work/"
echo "clean root for $name: $(cd "$root" && find . -path ./proc -prune -o -type f ! -path "./opt/*" -print | sort | tr '\n' ' ')"

run() { chroot "$root" "${emulator[@]}" "$top/bin/gpu-admission" "$@"; }
expect_rc() { # expect_rc CODE DESCRIPTION -- ARGS...
  local want="$1" what="$2"; shift 3
  local got=0 out
  out="$(run "$@" 2>&1)" || got=$?
  if [ "$got" -ne "$want" ]; then
    printf '%s\n' "$out" | tail -n 20 >&2
    die "$what: exit $got, expected $want (gpu-admission $*)"
  fi
  echo "ok   $what (exit $got)"
  last_output="$out"
}

# --- the commands -------------------------------------------------------------------------------
expect_rc 0 "version" -- version
grep -q "^gpu-admission $version\$" <<<"$last_output" ||
  die "version says '$(head -n 1 <<<"$last_output")', expected gpu-admission $version"
sed 's/^/       /' <<<"$last_output"
policy="$top/examples/policy.yaml"
expect_rc 0 "policy lint of the example policy" -- policy lint "$policy"
expect_rc 0 "check of an allowed example manifest" -- check --policy "$policy" /work/training-pod.yaml
expect_rc 1 "check of a denied example manifest" -- check --policy "$policy" /work/privileged-pod.yaml
expect_rc 0 "certs" -- certs --service gpu-admission --namespace gpu-admission --out-dir /work/certs

# --- serve, asked from outside the root ---------------------------------------------------------
port=$((20000 + RANDOM % 20000)) metrics_port=$((40000 + RANDOM % 20000))
chroot "$root" "${emulator[@]}" "$top/bin/gpu-admission" serve --policy "$policy" --cluster off \
  --tls-cert /work/certs/tls.crt --tls-key /work/certs/tls.key --grace-period 1 \
  --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$metrics_port" 2>"$root/work/serve.log" &
serve_pid=$!
host=gpu-admission.gpu-admission.svc
curl_tls=(curl -sS --max-time 5 --cacert "$root/work/certs/ca.crt" --resolve "$host:$port:127.0.0.1")
ready=""
for _ in $(seq 1 100); do
  kill -0 "$serve_pid" 2>/dev/null || { cat "$root/work/serve.log" >&2; die "serve exited before it was ready"; }
  ready="$("${curl_tls[@]}" "https://$host:$port/readyz" 2>/dev/null || true)"
  [ -n "$ready" ] && break
  sleep 0.2
done
[ -n "$ready" ] || { tail -n 20 "$root/work/serve.log" >&2; die "/readyz did not answer on 127.0.0.1:$port"; }
echo "ok   serve: /readyz over TLS, verified with the generated CA: $ready"
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"0c6f5d2e-1",
 "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
 "namespace":"research","operation":"CREATE","userInfo":{"username":"verify"},"object":{"apiVersion":"v1",
 "kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"main","image":"busybox",
 "securityContext":{"privileged":true}}]}}}}'
answer="$("${curl_tls[@]}" -H 'Content-Type: application/json' --data-binary "$review" "https://$host:$port/validate")" ||
  die "POST /validate failed"
grep -q '"allowed":false' <<<"$answer" || die "/validate allowed a privileged pod: $answer"
echo "ok   serve: /validate denies a privileged pod"
curl -sS --max-time 5 "http://127.0.0.1:$metrics_port/metrics" | grep -q '^gpu_admission_build_info' ||
  die "/metrics has no gpu_admission_build_info"
echo "ok   serve: /metrics"
kill -TERM "$serve_pid"
rc=0 && wait "$serve_pid" || rc=$?
serve_pid=""
[ "$rc" -eq 0 ] || { tail -n 20 "$root/work/serve.log" >&2; die "serve exited $rc on SIGTERM, expected 0"; }
echo "ok   serve: exit 0 on SIGTERM"
echo "verify-release: $name runs on a clean root"
