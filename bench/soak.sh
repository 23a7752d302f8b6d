#!/usr/bin/env bash
# Soak test on loopback: steady load on /validate and /mutate for DURATION seconds (default 300)
# while the policy and the certificate are rotated every RELOAD_EVERY seconds (default 10) the
# way the kubelet updates mounted ConfigMaps and Secrets (a new timestamped directory, then an
# atomic swap of the ..data symlink). Fails (exit 1) on any failed request, a failed reload,
# RSS growth over RSS_GROWTH_MIB (default 16) after warm-up, or file-descriptor growth.
#
#   bench/soak.sh                   # 5 minutes
#   DURATION=3600 bench/soak.sh     # an hour
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-300}"
RELOAD_EVERY="${RELOAD_EVERY:-10}"
RSS_GROWTH_MIB="${RSS_GROWTH_MIB:-16}"
BUILD="${BUILD:-build-bench}"
command -v wrk >/dev/null || { echo "soak.sh needs wrk (apt-get install wrk)" >&2; exit 2; }
if [ ! -x "$BUILD/gpu-admission" ] || [ ! -x "$BUILD/bench/gpu-admission-bench" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_TESTS=OFF -DGPU_ADMISSION_BENCH=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target gpu-admission gpu-admission-bench
fi
bin="$BUILD/gpu-admission"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$BUILD/bench/gpu-admission-bench" --write-reviews "$work"
mkdir -p "$work/config" "$work/tls"

# publish DIR NAME FILE...: a kubelet-style update of a mounted volume.
generation=0
publish() {
  local dir="$1"; shift
  generation=$((generation + 1))
  local ts="..$(date +%Y_%m_%d_%H_%M_%S).$generation"
  mkdir "$dir/$ts"
  while [ $# -gt 0 ]; do cp "$2" "$dir/$ts/$1"; ln -sfn "..data/$1" "$dir/$1"; shift 2; done
  ln -sfn "$ts" "$dir/..data_tmp"
  mv -T "$dir/..data_tmp" "$dir/..data"
  find "$dir" -maxdepth 1 -name '..20*' ! -name "$ts" -exec rm -rf {} +
}
policy_variant() {  # a valid policy whose cap changes, so each reload is a real change
  "$bin" policy show --default | sed "s/maxGpusPerPod: 8/maxGpusPerPod: $((8 + $1 % 5))/" >"$work/policy.yaml"
}
new_cert() { rm -rf "$work/certs"; "$bin" certs --service localhost --namespace soak --out-dir "$work/certs" >/dev/null 2>&1; }

policy_variant 0; publish "$work/config" policy.yaml "$work/policy.yaml"
new_cert; publish "$work/tls" tls.crt "$work/certs/tls.crt" tls.key "$work/certs/tls.key"

port=19643; metrics=19690
"$bin" serve --policy "$work/config/policy.yaml" --tls-cert "$work/tls/tls.crt" --tls-key "$work/tls/tls.key" \
  --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$metrics" --log-level warn 2>"$work/serve.log" &
server=$!; pids+=("$server")
for _ in $(seq 1 100); do curl -sk -o /dev/null "https://127.0.0.1:$port/readyz" && break; sleep 0.1; done

for endpoint in validate mutate; do
  cat >"$work/$endpoint.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open("$work/training-pod.json", "rb")); wrk.body = f:read("*a"); f:close()
LUA
  wrk -t1 -c8 -d"${DURATION}s" --timeout 5s -s "$work/$endpoint.lua" "https://127.0.0.1:$port/$endpoint" >"$work/wrk-$endpoint.txt" 2>&1 &
  pids+=($!)
done

sample() { echo "$(awk '/VmRSS/ {print $2}' /proc/$server/status) $(ls /proc/$server/fd | wc -l)"; }
start=$(date +%s); reloads=0; baseline=""; peak_rss=0; last=""
while [ $(( $(date +%s) - start )) -lt "$DURATION" ]; do
  sleep "$RELOAD_EVERY"
  reloads=$((reloads + 1))
  policy_variant "$reloads"; publish "$work/config" policy.yaml "$work/policy.yaml"
  new_cert; publish "$work/tls" tls.crt "$work/certs/tls.crt" tls.key "$work/certs/tls.key"
  last="$(sample)"
  [ -z "$baseline" ] && [ "$reloads" -ge 3 ] && baseline="$last"   # after warm-up
  rss=${last% *}; [ "$rss" -gt "$peak_rss" ] && peak_rss=$rss
  echo "t=$(( $(date +%s) - start ))s rss=$((rss / 1024))MiB fds=${last#* } reloads=$reloads" >&2
done
wait "${pids[1]}" "${pids[2]}" 2>/dev/null || true
sleep 2
metrics_text="$(curl -s "http://127.0.0.1:$metrics/metrics")"
ok_policy="$(awk '/^gpu_admission_policy_reloads_total\{result="success"\}/ {print $2}' <<<"$metrics_text")"
bad_policy="$(awk '/^gpu_admission_policy_reloads_total\{result="failure"\}/ {print $2}' <<<"$metrics_text")"
bad_cert="$(awk '/^gpu_admission_certificate_reloads_total\{result="failure"\}/ {print $2}' <<<"$metrics_text")"

fail=0
for endpoint in validate mutate; do
  f="$work/wrk-$endpoint.txt"
  reqs="$(awk '/requests in/ {print $1}' "$f")"
  errs="$(awk '/Socket errors/ {gsub(",",""); print $4+$6+$8+$10}' "$f")"
  non2xx="$(awk '/Non-2xx/ {print $NF}' "$f")"
  echo "/$endpoint: ${reqs:-0} requests, socket errors ${errs:-0}, non-2xx ${non2xx:-0}"
  [ "${errs:-0}" -eq 0 ] && [ "${non2xx:-0}" -eq 0 ] && [ "${reqs:-0}" -gt 0 ] || fail=1
done
echo "reloads: $reloads rotations; policy reloads ok=${ok_policy:-0} failed=${bad_policy:-0}; certificate reload failures=${bad_cert:-0}"
awk -v ok="${ok_policy:-0}" -v bad="${bad_policy:-0}" -v badc="${bad_cert:-0}" -v n="$reloads" \
  'BEGIN { exit !(bad + 0 == 0 && badc + 0 == 0 && ok + 0 >= n - 1) }' || { echo "FAIL: reloads" >&2; fail=1; }
base_rss=${baseline% *}; base_fds=${baseline#* }; end_rss=${last% *}; end_fds=${last#* }
echo "RSS after warm-up $((base_rss / 1024)) MiB, at the end $((end_rss / 1024)) MiB, peak $((peak_rss / 1024)) MiB; fds $base_fds -> $end_fds"
[ $(( (end_rss - base_rss) / 1024 )) -le "$RSS_GROWTH_MIB" ] || { echo "FAIL: RSS grew" >&2; fail=1; }
[ "$end_fds" -le $(( base_fds + 4 )) ] || { echo "FAIL: file descriptors grew" >&2; fail=1; }
[ "$fail" -eq 0 ] && echo "soak: PASS" || echo "soak: FAIL"
exit "$fail"
