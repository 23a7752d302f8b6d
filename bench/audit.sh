#!/usr/bin/env bash
# The audit at cluster scale: `gpu-admission audit` against a stand-in API server
# (bench/audit_standin.cpp: the tests' fake API server holding a generated cluster) serving PODS
# pods (default 150,000, a 5,000-node GPU cluster) with their owners, generated from SEED, a
# tenth of the pods violating one rule of bench/audit-policy.yaml. Before any timing it checks a
# sample of the generated objects with `gpu-admission check` (passing ones pass, violating ones
# violate exactly their rule, stored pods need no /mutate patch). Then it times the audit (-o json, then -o policyreport) under
# /usr/bin/time -v, the audit on core AUDIT_CORE and the stand-in on STANDIN_CORE, and prints: wall
# time, user/sys CPU, peak RSS, objects judged per kind, pages listed and MB transferred (the
# stand-in's own counters), the stand-in's CPU, the largest PolicyReport and its namespace; the
# admission path's cost per review (gpu-admission-bench) beside the audit's CPU per judged object;
# a profile (PROFILE=1, perf) of where the audit's time goes; and last the comparison of the
# audit's totals per tenant and rule, per-namespace counts, judged kinds and violating objects
# with the stand-in's independent count: MATCH, or the differences (exit 1).
#
# It builds nothing: it takes the binaries from BUILD (default build-bench), or GPU_ADMISSION,
# STANDIN and MICRO. Build them with
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DGPU_ADMISSION_BENCH=ON -DGPU_ADMISSION_TESTS=OFF
#   cmake --build build-bench -j2 --target gpu-admission gpu-admission-bench gpu-admission-audit-standin
#
#   bench/audit.sh                    # 150,000 pods, seed 1
#   PODS=5000 PROFILE=0 bench/audit.sh   # a quick smoke test
#   KEEP=/tmp/audit-run bench/audit.sh   # keep the outputs (audit.json, reports.yaml, expected.json, perf)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build-bench}"
PODS="${PODS:-150000}"
SEED="${SEED:-1}"
PROFILE="${PROFILE:-1}"
AUDIT_CORE="${AUDIT_CORE:-0}"
STANDIN_CORE="${STANDIN_CORE:-1}"
GPU_ADMISSION="${GPU_ADMISSION:-$BUILD/gpu-admission}"
STANDIN="${STANDIN:-$BUILD/bench/gpu-admission-audit-standin}"
MICRO="${MICRO:-$BUILD/bench/gpu-admission-bench}"
POLICY=bench/audit-policy.yaml
MICRO_FILTER='BM_Validate_(TrainingPod|Deployment|LargePod)_DefaultPolicy$'

for bin in "$GPU_ADMISSION" "$STANDIN"; do
  [ -x "$bin" ] || { echo "audit.sh: no $bin: build it first (see the comment at the top of $0)" >&2; exit 2; }
done
for tool in jq awk taskset; do
  command -v "$tool" >/dev/null || { echo "audit.sh: needs $tool" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "audit.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

work="${KEEP:-$(mktemp -d)}"
mkdir -p "$work"
standin_pid=""
cleanup() {
  [ -n "$standin_pid" ] && kill "$standin_pid" 2>/dev/null && wait "$standin_pid" 2>/dev/null
  [ -z "${KEEP:-}" ] && rm -rf "$work"
  return 0
}
trap cleanup EXIT

echo "== machine: $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== stand-in: $PODS pods, seed $SEED (core $STANDIN_CORE)"
taskset -c "$STANDIN_CORE" "$STANDIN" --pods "$PODS" --seed "$SEED" --kubeconfig-out "$work/kubeconfig" \
  --expected-out "$work/expected.json" --samples-out "$work/samples" >"$work/standin.out" 2>"$work/standin.log" &
standin_pid=$!
for _ in $(seq 1 3000); do
  grep -qx ready "$work/standin.out" 2>/dev/null && break
  kill -0 "$standin_pid" 2>/dev/null || break
  sleep 0.2
done
grep -qx ready "$work/standin.out" 2>/dev/null || { echo "audit.sh: the stand-in did not start: $(tail -n 3 "$work/standin.log")" >&2; exit 2; }
cat "$work/standin.log"

# --- the sample, against the policy, before any timing ---------------------------------------
bench/audit_samples.sh "$GPU_ADMISSION" "$POLICY" "$work/samples" || exit 1

# What the stand-in served so far (the fake API server's counters: requests, lists, listPages, bytes, handlerSeconds).
counters() {
  curl -sk -H "Authorization: Bearer $(jq -r '.users[0].user.token' "$work/kubeconfig")" \
    "$(jq -r '.clusters[0].cluster.server' "$work/kubeconfig")/fake/counters"
}
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
busy_s() { awk -v t="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / t }' /proc/stat; }  # all CPUs
time_field() { awk -F': ' -v k="$2" 'index($0, k) { print $2 }' "$1" | head -n1 | tr -d ' '; }
seconds_of() {  # h:mm:ss or m:ss.cc -> seconds
  awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }' <<<"$1"
}

# run_audit NAME OUTPUT_FORMAT -> $work/NAME.out, $work/NAME.time; sets the figures below
run_audit() {
  local name="$1" format="$2" before after cpu_before busy_before code=0
  before="$(counters)"; cpu_before="$(cpu_s "$standin_pid")"; busy_before="$(busy_s)"
  /usr/bin/time -v -o "$work/$name.time" taskset -c "$AUDIT_CORE" "$GPU_ADMISSION" audit --kubeconfig "$work/kubeconfig" \
    -p "$POLICY" -o "$format" >"$work/$name.out" 2>"$work/$name.err" || code=$?
  local busy_after; busy_after="$(busy_s)"
  after="$(counters)"
  if [ "$code" -ge 2 ]; then echo "audit.sh: the audit failed (exit $code): $(tail -n 3 "$work/$name.err")" >&2; exit 1; fi
  wall_s="$(seconds_of "$(time_field "$work/$name.time" 'Elapsed (wall clock)')")"
  user_s="$(time_field "$work/$name.time" 'User time')"
  sys_s="$(time_field "$work/$name.time" 'System time')"
  rss_kb="$(time_field "$work/$name.time" 'Maximum resident set size')"
  pages="$(jq -n --argjson a "$after" --argjson b "$before" '$a.listPages - $b.listPages')"
  lists="$(jq -n --argjson a "$after" --argjson b "$before" '$a.lists - $b.lists')"
  requests="$(jq -n --argjson a "$after" --argjson b "$before" '$a.requests - $b.requests - 1')"
  mb="$(jq -n --argjson a "$after" --argjson b "$before" '($a.bytes - $b.bytes) / 1e6 | . * 10 | round / 10')"
  handler_s="$(jq -n --argjson a "$after" --argjson b "$before" '($a.handlerSeconds - $b.handlerSeconds) * 100 | round / 100')"
  standin_cpu="$(awk -v a="$cpu_before" -v b="$(cpu_s "$standin_pid")" 'BEGIN { printf "%.2f", b - a }')"
  echo "$name: wall ${wall_s} s, CPU ${user_s} s user + ${sys_s} s sys, peak RSS $((rss_kb / 1024)) MiB ($rss_kb KiB); exit $code"
  echo "$name: $requests requests, $lists lists in $pages pages, $mb MB; stand-in CPU ${standin_cpu} s (${handler_s} s building pages)"
  # What else ran meanwhile: the machine's busy CPU time less the audit's and the stand-in's.
  other_s="$(awk -v a="$busy_before" -v b="$busy_after" -v u="$user_s" -v s="$sys_s" -v c="$standin_cpu" \
    'BEGIN { o = b - a - u - s - c; printf "%.1f", o < 0 ? 0 : o }')"
  echo "$name: other processes used ${other_s} s of CPU meanwhile (the machine had $(nproc) x ${wall_s} s)"
}

echo
echo "== audit -o json (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
run_audit json json
json_wall="$wall_s"; json_user="$user_s"; json_sys="$sys_s"; json_rss="$rss_kb"; json_other="$other_s"
judged_total="$(jq '[.judged[]] | add' "$work/json.out")"
echo "judged: $(jq -r '.judged | to_entries | map("\(.value) \(.key)") | join(", ")' "$work/json.out") ($judged_total objects)"
echo "not judged: $(jq -r '.skipped | to_entries | map("\(.value) \(.key)") | join(", ")' "$work/json.out")"
echo "audit's own duration: $(jq '.durationSeconds * 100 | round / 100' "$work/json.out") s; $(jq '.violatingObjects' "$work/json.out") violating objects, $(jq '.objectsWithErrors' "$work/json.out") with errors"
jq -r '.notes[]? | "note: " + .' "$work/json.out"

echo
echo "== audit -o policyreport (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
run_audit reports policyreport
# Each YAML document is one namespace's report; its size as YAML, and as the JSON the API server stores.
awk -v out="$work/report-sizes" '
  function flush() { if (bytes > 0) print bytes, ns > out; bytes = 0; ns = "?" }
  BEGIN { ns = "?" }
  /^---$/ { flush(); next }
  { bytes += length($0) + 1 }
  /^  namespace: / && ns == "?" { ns = $2 }
  END { flush() }' "$work/reports.out"
reports="$(wc -l <"$work/report-sizes")"
read -r largest largest_ns < <(sort -nr "$work/report-sizes" | head -n1) || true
json_size=""
if command -v python3 >/dev/null && python3 -c 'import yaml' 2>/dev/null; then
  json_size="$(python3 - "$work/reports.out" "$largest_ns" <<'PY'
import json, sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("metadata", {}).get("namespace") == sys.argv[2]:
        print(len(json.dumps(doc, separators=(",", ":"))), len(doc.get("results", [])))
PY
)"
fi
echo "PolicyReports: $reports namespaces; largest ${largest:-0} bytes of YAML in ${largest_ns:-none}${json_size:+ ($(cut -d' ' -f1 <<<"$json_size") bytes as JSON, $(cut -d' ' -f2 <<<"$json_size") results)}; limit 1 MiB (1048576)"

# --- the admission path's own cost per object ---------------------------------------------------
echo
if [ -x "$MICRO" ]; then
  echo "== admission path: one /validate review (gpu-admission-bench, core $AUDIT_CORE)"
  taskset -c "$AUDIT_CORE" "$MICRO" --benchmark_filter="$MICRO_FILTER" --benchmark_min_time=0.3 \
    --benchmark_format=json 2>/dev/null >"$work/micro.json" || true
  jq -r '.benchmarks[] | "\(.name): \(.cpu_time / 1000 * 100 | round / 100) us CPU per review"' "$work/micro.json"
  review_us="$(jq '[.benchmarks[] | select(.name | test("TrainingPod")) | .cpu_time][0] / 1000' "$work/micro.json")"
else
  echo "== admission path: no $MICRO (build gpu-admission-bench for the comparison)"; review_us=""
fi
awk -v u="$json_user" -v s="$json_sys" -v n="$judged_total" -v r="$review_us" 'BEGIN {
  per = (u + s) * 1e6 / n
  printf "audit: %.2f us CPU per judged object (%.1f s CPU / %d objects)", per, u + s, n
  if (r != "") printf "; /validate of the training pod: %.2f us per review: the audit costs %.1fx a review per object", r, per / r
  printf "\n" }'

# --- where the time goes ---------------------------------------------------------------------
if [ "$PROFILE" = 1 ]; then
  echo
  bench/audit_profile.sh "$work" "$AUDIT_CORE" "$GPU_ADMISSION" "$POLICY" || echo "(no profile: see above)"
fi

# --- the independent count ------------------------------------------------------------------
echo
echo "== the audit against the stand-in's independent count"
if jq -n -r --slurpfile a "$work/json.out" --slurpfile e "$work/expected.json" -f bench/audit_compare.jq >"$work/compare.txt"; then
  cat "$work/compare.txt"
else
  echo "audit.sh: the comparison failed to run" >&2; exit 1
fi
echo
echo "summary: $PODS pods, seed $SEED: audit -o json wall ${json_wall} s, CPU ${json_user}+${json_sys} s, peak RSS $((json_rss / 1024)) MiB (other processes ${json_other} s CPU meanwhile); largest PolicyReport ${largest:-0} bytes (${largest_ns:-none}); $(tail -n1 "$work/compare.txt")"
tail -n1 "$work/compare.txt" | grep -q '^MATCH' || exit 1
