#!/usr/bin/env bash
# Compares two gpu-admission binaries at load, interleaved so that the VM's drift hits both: both
# serve with cluster state on (a stand-in API server holding CLUSTER_OBJECTS objects, as
# bench/load.sh's everything-on section) pinned to core 0, and wrk (one thread, 16 connections,
# on core 1) alternates between them, ROUNDS rounds of DURATION seconds per review: /validate of
# the training pod and of the DRA pod whose GPUs come from two cached claims.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY            # e.g. /tmp/plain/gpu-admission build-bench/gpu-admission
#   ROUNDS=6 DURATION=8 bench/ab.sh A B
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: bench/ab.sh OLD_BINARY NEW_BINARY" >&2; exit 2; }
a="$(realpath "$1")"; b="$(realpath "$2")"
BUILD="${BUILD:-build-bench}"
ROUNDS="${ROUNDS:-4}"; DURATION="${DURATION:-5}"; CLUSTER_OBJECTS="${CLUSTER_OBJECTS:-100000}"
for tool in "$BUILD/bench/gpu-admission-bench" "$BUILD/bench/gpu-admission-cluster-standin"; do
  [ -x "$tool" ] || { echo "bench/ab.sh: $tool missing (scripts/build-pgo.sh $BUILD builds it)" >&2; exit 2; }
done

work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$BUILD/bench/gpu-admission-bench" --write-reviews "$work"
"$a" certs --service localhost --namespace bench --out-dir "$work/certs" >/dev/null 2>&1
for review in training-pod-mutated dra-pod-mutated; do
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nlocal f = assert(io.open("%s", "rb"))\nwrk.body = f:read("*a")\nf:close()\n' \
    "$work/$review.json" >"$work/$review.lua"
done

taskset -c 1 "$BUILD/bench/gpu-admission-cluster-standin" --objects "$CLUSTER_OBJECTS" --kubeconfig-out "$work/kubeconfig" \
  >"$work/standin.out" 2>"$work/standin.log" &
pids+=($!)
for _ in $(seq 1 1200); do grep -qx ready "$work/standin.out" 2>/dev/null && break; sleep 0.1; done
grep -qx ready "$work/standin.out" || { echo "bench/ab.sh: the stand-in API server did not start" >&2; exit 1; }

port() { local p; for p in $(seq "$1" $(( $1 + 50 ))); do ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && { echo "$p"; return; }; done; exit 1; }
start() {  # BINARY PORT METRICS_PORT
  taskset -c 0 "$1" serve --listen "127.0.0.1:$2" --metrics-listen "127.0.0.1:$3" --tls-cert "$work/certs/tls.crt" \
    --tls-key "$work/certs/tls.key" --log-level error --cluster required --kubeconfig "$work/kubeconfig" 2>>"$work/serve.log" &
  pids+=($!)
  for _ in $(seq 1 600); do [ "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$2/readyz" || true)" = 200 ] && return; sleep 0.1; done
  echo "bench/ab.sh: $1 did not become ready" >&2; exit 1
}
pa="$(port 19801)"; start "$a" "$pa" "$(port 19891)"
pb="$(port $(( pa + 1 )))"; start "$b" "$pb" "$(port 19941)"
for p in "$pa" "$pb"; do
  for review in training-pod-mutated dra-pod-mutated; do
    curl -sk -X POST -H 'Content-Type: application/json' --data-binary @"$work/$review.json" "https://127.0.0.1:$p/validate" |
      grep -q '"allowed":true' || { echo "bench/ab.sh: the server on port $p did not allow $review" >&2; exit 1; }
  done
done

rps() { taskset -c 1 wrk -t1 -c16 -d"${DURATION}s" -s "$work/$2.lua" "https://127.0.0.1:$1/validate" 2>&1 | awk '/Requests\/sec/ {printf "%d", $2}'; }
rps "$pa" training-pod-mutated >/dev/null; rps "$pb" training-pod-mutated >/dev/null  # warm-up
echo "A: $a"
echo "B: $b"
printf '%-6s %14s %14s %9s %14s %14s %9s\n' round "training A" "training B" "B/A" "DRA A" "DRA B" "B/A"
for r in $(seq 1 "$ROUNDS"); do
  ta="$(rps "$pa" training-pod-mutated)"; tb="$(rps "$pb" training-pod-mutated)"
  da="$(rps "$pa" dra-pod-mutated)"; db="$(rps "$pb" dra-pod-mutated)"
  printf '%-6s %14s %14s %9s %14s %14s %9s\n' "$r" "$ta" "$tb" "$(awk -v x="$tb" -v y="$ta" 'BEGIN { printf "%.3f", x / y }')" \
    "$da" "$db" "$(awk -v x="$db" -v y="$da" 'BEGIN { printf "%.3f", x / y }')"
done
