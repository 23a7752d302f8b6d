#!/usr/bin/env bash
# End-to-end load test on loopback: gpu-admission serve pinned to one core, wrk on the other,
# 16 and 256 keep-alive connections, POSTing a 4 KB GPU-pod AdmissionReview to /validate and
# /mutate; and, in the same run on the same core, nginx answering a fixed AdmissionReview over
# TLS as the transport reference, and a webhook on Go's standard library (bench/go-webhook:
# net/http + encoding/json, the stack of controller-runtime webhooks) as the peer to beat.
# Prints requests/s, p50/p99, the ratios to nginx and to Go, and the server's peak RSS.
# Then, with everything on (CLUSTER=1, the default): gpu-admission serve with
# --cluster required against a stand-in API server (bench/cluster_standin.cpp, pinned to wrk's
# core, idle once synced) holding CLUSTER_OBJECTS objects (100,000: namespaces and
# ResourceClaims), /validate of a GPU pod whose GPUs come from two of those claims, /mutate of a
# pod whose five containers all get NVIDIA_VISIBLE_DEVICES=void from hide-gpus, and /validate of
# the training pod above on that same server; it prints how
# long the sync took and the RSS after it, and fails (exit 1) when the answers are not those.
# Bounded: each run lasts DURATION seconds (default 10).
#
#   bench/load.sh                 # builds build-bench/ (again when the sources changed), runs everything
#   DURATION=300 bench/load.sh    # a longer run (RSS growth check)
#   REFERENCES=0 bench/load.sh    # gpu-admission only
#   CLUSTER=0 bench/load.sh       # without the cluster-state section
#   PGO=0 bench/load.sh           # build BUILD (when missing) without profile-guided optimisation
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10}"
SERVER_CORE="${SERVER_CORE:-0}"
CLIENT_CORE="${CLIENT_CORE:-1}"
BUILD="${BUILD:-build-bench}"
REFERENCES="${REFERENCES:-1}"
CLUSTER="${CLUSTER:-1}"
PGO="${PGO:-1}"
CLUSTER_OBJECTS="${CLUSTER_OBJECTS:-100000}"
standin="$BUILD/bench/gpu-admission-cluster-standin"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need wrk || { [ "$REFERENCES" = 1 ] && { ! need nginx || ! need go; }; }; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q wrk nginx-light golang-go >/dev/null
fi
# What the binaries must be built from: every tracked file but the docs, as committed or staged,
# and any uncommitted change to them. A tree built from other sources is rebuilt (figures of a
# stale binary would be labelled with the wrong commit); a commit of docs alone rebuilds nothing.
# Outside a git checkout the existing build is used as it is.
sources_id() {
  git rev-parse --git-dir >/dev/null 2>&1 || return 0
  { git ls-files -s -- . ':(exclude)*.md'; git diff HEAD -- . ':(exclude)*.md'; } | sha1sum | cut -c1-16
}
stamp="$BUILD/load-sources.id"
wanted="$(sources_id)"
if [ -n "$wanted" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$wanted" ]; then
  echo "load.sh: $BUILD was built from other sources than this checkout's: rebuilding" >&2
  rm -f "$BUILD/gpu-admission" "$BUILD/bench/gpu-admission-bench" "$standin"
fi
if [ -n "$wanted" ] && [ ! -f "$stamp" ] && [ -x "$BUILD/gpu-admission" ]; then
  echo "load.sh: $BUILD has no record of the sources it was built from: rebuilding" >&2
  rm -f "$BUILD/gpu-admission" "$BUILD/bench/gpu-admission-bench" "$standin"
fi
if [ ! -x "$BUILD/gpu-admission" ] || [ ! -x "$BUILD/bench/gpu-admission-bench" ]; then
  if [ "$PGO" = 1 ]; then
    scripts/build-pgo.sh "$BUILD"  # the release build: profile-guided (also builds the stand-in)
  else
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_TESTS=OFF -DGPU_ADMISSION_BENCH=ON >/dev/null
    cmake --build "$BUILD" -j"$(nproc)" --target gpu-admission gpu-admission-bench
  fi
  [ -z "$wanted" ] || printf '%s\n' "$wanted" >"$stamp"
fi
pgo="$(sed -n 's/^GPU_ADMISSION_PGO:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"
if [ "$CLUSTER" = 1 ] && [ ! -x "$standin" ] && [ -f "$BUILD/CMakeCache.txt" ]; then
  # A build tree from before the stand-in: add it (the section below is skipped if this fails).
  cmake --build "$BUILD" -j"$(nproc)" --target gpu-admission-cluster-standin >"${TMPDIR:-/tmp}/load-standin-build.log" 2>&1 ||
    echo "load.sh: could not build gpu-admission-cluster-standin (see ${TMPDIR:-/tmp}/load-standin-build.log)" >&2
fi

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$BUILD/bench/gpu-admission-bench" --write-reviews "$work"
"$BUILD/gpu-admission" certs --service localhost --namespace bench --out-dir "$work/certs" >/dev/null 2>&1
review="$work/training-pod.json"
# /validate receives the pod as /mutate left it (the API server runs mutating webhooks first):
# an unmutated GPU pod would be refused for what /mutate fixes, a different request.
validate_review="$work/training-pod-mutated.json"

write_script() {  # FILE REVIEW
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open("$2", "rb"))
wrk.body = f:read("*a")
f:close()
LUA
}
write_script "$work/post.lua" "$review"
write_script "$work/post-validate.lua" "$validate_review"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() { local p; for p in $(seq "$1" $(( $1 + 50 ))); do port_free "$p" && { echo "$p"; return; }; done; echo "no free port near $1" >&2; exit 1; }
wait_ready() {  # url
  for _ in $(seq 1 100); do curl -sk -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "server at $1 did not come up" >&2; exit 1
}

# run_wrk NAME URL CONNECTIONS [SCRIPT] -> appends a result line (NAME padded to row_width)
results=()
row_width=28
# One wrk thread: the client has one core, and two threads on it would take turns, adding their
# time slices to every target's tail latency.
warm_up() { taskset -c "$CLIENT_CORE" wrk -t1 -c16 -d2s -s "$work/${2:-post-validate.lua}" "$1" >/dev/null 2>&1 || true; }
# drive LABEL BASE_URL: /validate and /mutate at 16 and 256 connections after a warm-up; leaves
# the /validate figures in v16_rps, v256_rps and v256_p99.
drive() {
  local label="$1" base="$2"
  warm_up "$base/validate"
  run_wrk "$label /validate" "$base/validate" 16 post-validate.lua; v16_rps="$last_rps"
  run_wrk "$label /validate" "$base/validate" 256 post-validate.lua; v256_rps="$last_rps"; v256_p99="$last_p99"
  run_wrk "$label /mutate" "$base/mutate" 16
  run_wrk "$label /mutate" "$base/mutate" 256
}
run_wrk() {
  local name="$1" url="$2" conns="$3" script="${4:-post.lua}" threads=1
  local out
  out="$(taskset -c "$CLIENT_CORE" wrk -t"$threads" -c"$conns" -d"${DURATION}s" --timeout 5s --latency -s "$work/$script" "$url" 2>&1)"
  local rps p50 p99 errors non2xx
  rps="$(awk '/Requests\/sec/ {print $2}' <<<"$out")"
  p50="$(awk '$1=="50%" {print $2}' <<<"$out")"
  p99="$(awk '$1=="99%" {print $2}' <<<"$out")"
  errors="$(awk '/Socket errors/ {gsub(",",""); print $4+$6+$8+$10}' <<<"$out")"
  non2xx="$(awk '/Non-2xx/ {print $NF}' <<<"$out")"
  last_rps="${rps:-0}"; last_p99="${p99:--}"
  results+=("$(printf "%-${row_width}s %6s %12s %10s %10s %8s" "$name" "$conns" "${rps:-0}" "${p50:--}" "${p99:--}" "$(( ${errors:-0} + ${non2xx:-0} ))")")
  echo "$name c=$conns: ${rps:-0} req/s, p50 ${p50:--}, p99 ${p99:--}, errors $(( ${errors:-0} + ${non2xx:-0} ))" >&2
}

nginx_rps=0; go_rps=0; go_p99=""
if [ "$REFERENCES" = 1 ]; then
# --- nginx: a fixed AdmissionReview over TLS, same core -----------------------------------
nginx_port="$(pick_port 18443)"
mkdir -p "$work/nginx"
reply='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true}}'
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_body_buffer_size 64k;
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $work/certs/tls.crt;
    ssl_certificate_key $work/certs/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / { default_type application/json; return 200 '$reply'; }
  }
}
CONF
taskset -c "$SERVER_CORE" nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" &
pids+=($!)
wait_ready "https://127.0.0.1:$nginx_port/"
warm_up "https://127.0.0.1:$nginx_port/validate"
run_wrk "nginx fixed reply" "https://127.0.0.1:$nginx_port/validate" 16
nginx_rps="$last_rps"
run_wrk "nginx fixed reply" "https://127.0.0.1:$nginx_port/validate" 256
# The same fixed reply to the everything-on section's /validate body (a bigger review): the
# ratio of that section on equal bytes read.
nginx_dra_rps=0
if [ "$CLUSTER" = 1 ] && [ -f "$work/dra-pod-mutated.json" ]; then
  write_script "$work/post-dra-validate.lua" "$work/dra-pod-mutated.json"
  run_wrk "nginx fixed reply, DRA body" "https://127.0.0.1:$nginx_port/validate" 16 post-dra-validate.lua
  nginx_dra_rps="$last_rps"
fi
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'

# --- Go net/http + encoding/json webhook, same core (GOMAXPROCS=1: one core) --------------
(cd bench/go-webhook && GOPROXY=off GOFLAGS=-mod=mod go build -o "$work/go-webhook" .)
go_port="$(pick_port 18543)"
GOMAXPROCS=1 taskset -c "$SERVER_CORE" "$work/go-webhook" --listen "127.0.0.1:$go_port" \
  --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" 2>"$work/go.log" &
pids+=($!)
wait_ready "https://127.0.0.1:$go_port/healthz"
drive "Go net/http" "https://127.0.0.1:$go_port"
go_rps="$v16_rps"; go_rps_256="$v256_rps"; go_p99_256="$v256_p99"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'
fi

# --- gpu-admission serve, same core --------------------------------------------------------
port="$(pick_port 19443)"
metrics_port="$(pick_port 19590)"
taskset -c "$SERVER_CORE" "$BUILD/gpu-admission" serve --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$metrics_port" \
  --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" --log-level error 2>"$work/serve.log" &
server_pid=$!
pids+=("$server_pid")
wait_ready "https://127.0.0.1:$port/readyz"
drive "gpu-admission" "https://127.0.0.1:$port"
validate_rps="$v16_rps"; validate_rps_256="$v256_rps"; validate_p99_256="$v256_p99"
rss_kb="$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")"
fds="$(ls "/proc/$server_pid/fd" | wc -l)"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; unset 'pids[-1]'

# --- everything on: gpu-admission serve with cluster state, same core -----------------------
# The stand-in API server runs on wrk's core: it works while the informers list, then idles.
# cluster_status: off (CLUSTER=0), skipped (nothing to run it with), failed, or ok.
cluster_status=off; cluster_note=""; cluster_rows=()
cluster_fail() { cluster_status=failed; cluster_note="$1"; echo "load.sh: FAIL (cluster state): $1" >&2; }
metric() {  # METRICS_TEXT NAME_AND_LABELS -> value (0 when absent)
  awk -v k="$2" 'index($0, k " ") == 1 { v = $2 } END { printf "%d", v + 0 }' <<<"$1"
}
run_cluster() {
  local dir="$work/cluster"
  mkdir -p "$dir"
  taskset -c "$CLIENT_CORE" "$standin" --objects "$CLUSTER_OBJECTS" --kubeconfig-out "$dir/kubeconfig" \
    >"$dir/standin.out" 2>"$dir/standin.log" &
  standin_pid=$!
  pids+=("$standin_pid")
  for _ in $(seq 1 1200); do
    grep -qx ready "$dir/standin.out" 2>/dev/null && break
    kill -0 "$standin_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -qx ready "$dir/standin.out" 2>/dev/null; then
    cluster_fail "the stand-in API server did not start: $(tail -n 3 "$dir/standin.log")"; return
  fi
  cat "$dir/standin.log" >&2
  cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$1/stat"; }  # user + system
  local standin_cpu_before
  standin_cpu_before="$(cpu_s "$standin_pid")"

  local cport cmetrics started ended code=000
  cport="$(pick_port 19643)"
  cmetrics="$(pick_port 19690)"
  started="$(date +%s%N)"
  taskset -c "$SERVER_CORE" "$BUILD/gpu-admission" serve --listen "127.0.0.1:$cport" --metrics-listen "127.0.0.1:$cmetrics" \
    --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" --log-level info \
    --cluster required --kubeconfig "$dir/kubeconfig" 2>"$dir/serve.log" &
  cserver_pid=$!
  pids+=("$cserver_pid")
  # /readyz answers 200 once every resource has been listed completely (and published).
  for _ in $(seq 1 6000); do
    code="$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$cport/readyz" 2>/dev/null || true)"
    [ "$code" = 200 ] && break
    kill -0 "$cserver_pid" 2>/dev/null || break
    sleep 0.05
  done
  ended="$(date +%s%N)"
  if [ "$code" != 200 ]; then
    cluster_fail "gpu-admission serve --cluster required never became ready (readyz $code): $(tail -n 3 "$dir/serve.log")"; return
  fi
  sync_s="$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')"
  # CPU seconds the sync cost each side (the server's include its start; the stand-in's, its lists).
  sync_cpu="server $(cpu_s "$cserver_pid") s, stand-in $(awk -v a="$standin_cpu_before" -v b="$(cpu_s "$standin_pid")" 'BEGIN { printf "%.1f", b - a }') s"
  synced_rss_kb="$(awk '/VmRSS/ {print $2}' "/proc/$cserver_pid/status")"
  # The informers' own figures ("cluster state synced" log lines: seconds per resource).
  informer_sync="$(sed -n 's/.*"cluster state synced".*"resource":"\([a-z]*\)".*"seconds":\([0-9.e-]*\).*/\1 \2 s/p' "$dir/serve.log" | paste -sd, - | sed 's/,/, /g' || true)"
  # The object gauges follow the index at the publisher's next tick (100 ms), not at readyz.
  local m tries=0
  while :; do
    m="$(curl -s "http://127.0.0.1:$cmetrics/metrics" || true)"
    cached_ns="$(metric "$m" 'gpu_admission_cluster_objects{resource="namespaces"}')"
    cached_claims="$(metric "$m" 'gpu_admission_cluster_objects{resource="resourceclaims"}')"
    [ "${cached_claims:-0}" != 0 ] || [ $((tries += 1)) -gt 20 ] && break
    sleep 0.1
  done
  echo "gpu-admission+cluster: ready after ${sync_s} s ($cached_ns namespaces, $cached_claims resourceclaims cached; informers: ${informer_sync:-no sync lines in the log}; CPU: $sync_cpu); RSS $(( synced_rss_kb / 1024 )) MiB" >&2

  # The answers the runs are about, once each: /validate allows the DRA pod (its two claims were
  # counted from the cache, not refused as unknown) and the training pod, /mutate hides the GPUs from every container.
  local base="https://127.0.0.1:$cport" answer patch got
  answer="$(curl -sk -X POST -H 'Content-Type: application/json' --data-binary @"$work/dra-pod-mutated.json" "$base/validate")"
  if ! grep -q '"allowed":true' <<<"$answer"; then
    cluster_fail "/validate did not allow the DRA pod ($(wc -c <"$work/dra-pod-mutated.json") bytes): ${answer:0:600}"; return
  fi
  answer="$(curl -sk -X POST -H 'Content-Type: application/json' --data-binary @"$validate_review" "$base/validate")"
  if ! grep -q '"allowed":true' <<<"$answer"; then
    cluster_fail "/validate did not allow the training pod: ${answer:0:600}"; return
  fi
  answer="$(curl -sk -X POST -H 'Content-Type: application/json' --data-binary @"$work/cpu-pod.json" "$base/mutate")"
  patch="$(sed -n 's/.*"patch":"\([^"]*\)".*/\1/p' <<<"$answer" | base64 -d 2>/dev/null || true)"
  want="$(grep -o '"image":' "$work/cpu-pod.json" | wc -l || true)"  # one image per container
  got="$(grep -oE '"path":"/spec/(initContainers|containers)/[0-9]+/env[^"]*","value":\{"name":"NVIDIA_VISIBLE_DEVICES"' <<<"$patch" | sort -u | wc -l || true)"
  if [ "$want" -lt 1 ] || [ "$got" != "$want" ]; then
    cluster_fail "/mutate of the CPU pod wrote NVIDIA_VISIBLE_DEVICES into $got of $want containers: ${patch:-${answer:0:600}}"; return
  fi
  m="$(curl -s "http://127.0.0.1:$cmetrics/metrics" || true)"
  local hits fetched absent errors
  hits="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="hit"}')"
  fetched="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="fetched"}')"
  absent="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="absent"}')"
  errors="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="error"}')"
  if [ "$hits" -lt 2 ] || [ "$fetched" != 0 ] || [ "$absent" != 0 ] || [ "$errors" != 0 ]; then
    cluster_fail "claim lookups were not all cache hits: hit $hits, fetched $fetched, absent $absent, error $errors"; return
  fi
  cluster_checks="/validate allowed the DRA pod (claim lookups: $hits cache hits, 0 GETs, 0 absent) and the training pod; /mutate wrote NVIDIA_VISIBLE_DEVICES=void into $got of $want containers"
  echo "gpu-admission+cluster: $cluster_checks" >&2

  write_script "$work/post-cpu-mutate.lua" "$work/cpu-pod.json"
  write_script "$work/post-dra-validate.lua" "$work/dra-pod-mutated.json"  # also without REFERENCES
  local before=${#results[@]}
  row_width=32
  warm_up "$base/validate" post-dra-validate.lua
  run_wrk "gpu-admission+cluster /validate" "$base/validate" 16 post-dra-validate.lua; cluster_rps="$last_rps"
  run_wrk "gpu-admission+cluster /validate" "$base/validate" 256 post-dra-validate.lua; cluster_rps_256="$last_rps"
  run_wrk "gpu-admission+cluster /mutate" "$base/mutate" 16 post-cpu-mutate.lua
  run_wrk "gpu-admission+cluster /mutate" "$base/mutate" 256 post-cpu-mutate.lua
  # The headline review (training pod, extended-resource GPUs) on this server: what cluster
  # state being on costs a review that names no claim.
  run_wrk "gpu-admission+cluster /validate" "$base/validate" 16 post-validate.lua; cluster_training_rps="$last_rps"
  row_width=28
  cluster_rows=("${results[@]:$before}")
  results=("${results[@]:0:$before}")
  cluster_peak_kb="$(awk '/VmHWM/ {print $2}' "/proc/$cserver_pid/status")"
  cluster_fds="$(ls "/proc/$cserver_pid/fd" | wc -l)"
  m="$(curl -s "http://127.0.0.1:$cmetrics/metrics" || true)"
  fetched="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="fetched"}')"
  absent="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="absent"}')"
  errors="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="error"}')"
  cluster_lookups="$(metric "$m" 'gpu_admission_cluster_lookups_total{resource="resourceclaims",result="hit"}') hits, $fetched GETs, $absent absent, $errors errors"
  if [ "$fetched" != 0 ] || [ "$absent" != 0 ] || [ "$errors" != 0 ]; then
    cluster_fail "claim lookups under load were not all cache hits: $cluster_lookups"; return
  fi
  cluster_status=ok
}
if [ "$CLUSTER" = 1 ]; then
  if [ ! -x "$standin" ]; then
    cluster_status=skipped
    cluster_note="no stand-in API server at $standin (cmake --build $BUILD --target gpu-admission-cluster-standin)"
  elif [ ! -f "$work/dra-pod-mutated.json" ] || [ ! -f "$work/cpu-pod.json" ]; then
    cluster_status=skipped
    cluster_note="$BUILD/bench/gpu-admission-bench --write-reviews writes no dra-pod/cpu-pod reviews: rebuild it"
  else
    run_cluster
  fi
  [ "$cluster_status" = skipped ] && echo "load.sh: cluster-state section skipped: $cluster_note" >&2
  for p in ${cserver_pid:-} ${standin_pid:-}; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
fi

echo
echo "machine: $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); server on core $SERVER_CORE, wrk (one thread) on core $CLIENT_CORE; build $BUILD (PGO: ${pgo:-OFF}) of commit $("$BUILD/gpu-admission" version 2>/dev/null | sed -n "s/^ *commit: *//p")$([ -z "$(git status --porcelain -- . 2>/dev/null)" ] || echo " with uncommitted changes"); 2 s warm-up, ${DURATION}s per run; review $(wc -c <"$review") bytes"
printf '%-28s %6s %12s %10s %10s %8s\n' "target" "conns" "requests/s" "p50" "p99" "errors"
printf '%s\n' "${results[@]}"
awk -v v="$validate_rps" -v n="$nginx_rps" 'BEGIN { if (n > 0) printf "gpu-admission /validate vs nginx fixed reply at 16 connections: %.2fx\n", v / n }'
awk -v v="$validate_rps" -v g="$go_rps" 'BEGIN { if (g > 0) printf "gpu-admission /validate vs Go net/http at 16 connections: %.2fx requests/s\n", v / g }'
if [ "$go_rps" != 0 ]; then
  awk -v v="$validate_rps_256" -v g="$go_rps_256" 'BEGIN { if (g > 0) printf "gpu-admission /validate vs Go net/http at 256 connections: %.2fx requests/s\n", v / g }'
  echo "p99 at 256 connections: gpu-admission $validate_p99_256, Go net/http $go_p99_256"
fi
echo "gpu-admission peak RSS: $(( rss_kb / 1024 )) MiB; open file descriptors at the end: $fds"
case "$cluster_status" in
  ok)
    echo
    echo "with cluster state (--cluster required, stand-in API server with $CLUSTER_OBJECTS objects on core $CLIENT_CORE): $cached_ns namespaces and $cached_claims resourceclaims synced in ${sync_s} s (start to readyz; informers: ${informer_sync:-?}; CPU: $sync_cpu); RSS after sync $(( synced_rss_kb / 1024 )) MiB"
    echo "/validate: DRA pod, GPUs from two ResourceClaims resolved from cluster state, $(wc -c <"$work/dra-pod-mutated.json") bytes (last row: the training pod, $(wc -c <"$validate_review") bytes); /mutate: pod of $want containers without GPUs, hide-gpus patches each, $(wc -c <"$work/cpu-pod.json") bytes"
    echo "checked before the runs: $cluster_checks"
    printf '%-32s %6s %12s %10s %10s %8s\n' "target" "conns" "requests/s" "p50" "p99" "errors"
    printf '%s\n' "${cluster_rows[@]}"
    awk -v v="$cluster_rps" -v n="$nginx_rps" 'BEGIN { if (n > 0) printf "gpu-admission+cluster /validate vs nginx fixed reply at 16 connections: %.2fx\n", v / n }'
    awk -v v="$cluster_rps" -v n="$nginx_dra_rps" 'BEGIN { if (n > 0) printf "gpu-admission+cluster /validate vs nginx fixed reply to the same DRA review body at 16 connections: %.2fx\n", v / n }'
    awk -v v="$cluster_rps" -v p="$validate_rps" 'BEGIN { if (p > 0) printf "gpu-admission+cluster /validate vs gpu-admission /validate (training pod, no cluster state) at 16 connections: %.2fx\n", v / p }'
    awk -v v="$cluster_training_rps" -v n="$nginx_rps" -v p="$validate_rps" 'BEGIN { if (n > 0 && p > 0) printf "gpu-admission+cluster /validate of the training pod (last row) vs nginx fixed reply at 16 connections: %.2fx (%.2fx of the server without cluster state)\n", v / n, v / p }'
    awk -v v="$cluster_rps_256" -v p="$validate_rps_256" 'BEGIN { if (p > 0) printf "gpu-admission+cluster /validate vs gpu-admission /validate at 256 connections: %.2fx\n", v / p }'
    echo "gpu-admission+cluster peak RSS: $(( cluster_peak_kb / 1024 )) MiB; open file descriptors at the end: $cluster_fds; claim lookups: $cluster_lookups"
    ;;
  skipped) echo; echo "with cluster state: skipped: $cluster_note" ;;
  failed)
    echo
    echo "with cluster state: FAIL: $cluster_note"
    exit 1
    ;;
esac
