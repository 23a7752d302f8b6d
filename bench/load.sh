#!/usr/bin/env bash
# End-to-end load test on loopback: gpu-admission serve pinned to one core, wrk on the other,
# 16 and 256 keep-alive connections, POSTing a 4 KB GPU-pod AdmissionReview to /validate and
# /mutate; and, in the same run on the same core, nginx answering a fixed AdmissionReview over
# TLS as the transport reference, and a webhook on Go's standard library (bench/go-webhook:
# net/http + encoding/json, the stack of controller-runtime webhooks) as the peer to beat.
# Prints requests/s, p50/p99, the ratios to nginx and to Go, and the server's peak RSS.
# Bounded: each run lasts DURATION seconds (default 10).
#
#   bench/load.sh                 # builds if needed (build-bench/), runs everything
#   DURATION=300 bench/load.sh    # a longer run (RSS growth check)
#   REFERENCES=0 bench/load.sh    # gpu-admission only
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-10}"
SERVER_CORE="${SERVER_CORE:-0}"
CLIENT_CORE="${CLIENT_CORE:-1}"
BUILD="${BUILD:-build-bench}"
REFERENCES="${REFERENCES:-1}"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need wrk || { [ "$REFERENCES" = 1 ] && { ! need nginx || ! need go; }; }; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q wrk nginx-light golang-go >/dev/null
fi
if [ ! -x "$BUILD/gpu-admission" ] || [ ! -x "$BUILD/bench/gpu-admission-bench" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_TESTS=OFF -DGPU_ADMISSION_BENCH=ON >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target gpu-admission gpu-admission-bench
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

# run_wrk NAME URL CONNECTIONS [SCRIPT] -> appends a result line
results=()
# One wrk thread: the client has one core, and two threads on it would take turns, adding their
# time slices to every target's tail latency.
warm_up() { taskset -c "$CLIENT_CORE" wrk -t1 -c16 -d2s -s "$work/post-validate.lua" "$1" >/dev/null 2>&1 || true; }
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
  results+=("$(printf '%-28s %6s %12s %10s %10s %8s' "$name" "$conns" "${rps:-0}" "${p50:--}" "${p99:--}" "$(( ${errors:-0} + ${non2xx:-0} ))")")
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

echo
echo "machine: $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); server on core $SERVER_CORE, wrk (one thread) on core $CLIENT_CORE; 2 s warm-up, ${DURATION}s per run; review $(wc -c <"$review") bytes"
printf '%-28s %6s %12s %10s %10s %8s\n' "target" "conns" "requests/s" "p50" "p99" "errors"
printf '%s\n' "${results[@]}"
awk -v v="$validate_rps" -v n="$nginx_rps" 'BEGIN { if (n > 0) printf "gpu-admission /validate vs nginx fixed reply at 16 connections: %.2fx\n", v / n }'
awk -v v="$validate_rps" -v g="$go_rps" 'BEGIN { if (g > 0) printf "gpu-admission /validate vs Go net/http at 16 connections: %.2fx requests/s\n", v / g }'
if [ "$go_rps" != 0 ]; then
  awk -v v="$validate_rps_256" -v g="$go_rps_256" 'BEGIN { if (g > 0) printf "gpu-admission /validate vs Go net/http at 256 connections: %.2fx requests/s\n", v / g }'
  echo "p99 at 256 connections: gpu-admission $validate_p99_256, Go net/http $go_p99_256"
fi
echo "gpu-admission peak RSS: $(( rss_kb / 1024 )) MiB; open file descriptors at the end: $fds"
