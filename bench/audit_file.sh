#!/usr/bin/env bash
# `gpu-admission audit FILE` and `audit -` on what `kubectl get pods,namespaces -A -o json` prints
# for PODS pods (default 150,000: a 61 MiB List, bench/audit_file_list.py), under /usr/bin/time -v:
# the file read where it lies, the same List piped on standard input (spooled), kubectl's
# indented JSON, and (YAML=1, needs PyYAML) the List as `-o yaml`. Prints wall time, CPU and peak
# RSS of each, checks that every form gives the same result, and fails when a peak RSS passes
# LIMIT_MIB (default 150: the bound docs/audit.md states).
#
# It builds nothing: GPU_ADMISSION (default build/gpu-admission) is used as it is.
#   bench/audit_file.sh                  # 150,000 pods
#   PODS=20000 bench/audit_file.sh       # quick
#   YAML=1 bench/audit_file.sh           # also the YAML List (PyYAML writes it: slow)
set -euo pipefail
cd "$(dirname "$0")/.."
PODS="${PODS:-150000}"
LIMIT_MIB="${LIMIT_MIB:-150}"
YAML="${YAML:-0}"
GPU_ADMISSION="${GPU_ADMISSION:-build/gpu-admission}"
POLICY=bench/audit-policy.yaml

[ -x "$GPU_ADMISSION" ] || { echo "audit_file.sh: no $GPU_ADMISSION: build it first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "audit_file.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
command -v jq >/dev/null || { echo "audit_file.sh: needs jq" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/audit_file_list.py "$PODS" >"$work/pods.json"
python3 bench/audit_file_list.py "$PODS" --pretty >"$work/pretty.json"
forms=(file stdin pretty)
if [ "$YAML" = 1 ]; then
  python3 bench/audit_file_list.py "$PODS" --yaml >"$work/pods.yaml"
  forms+=(yaml)
fi

over=0
for form in "${forms[@]}"; do
  case "$form" in
    file) input="$work/pods.json"; cmd=("$GPU_ADMISSION" audit -p "$POLICY" -o json "$input") ;;
    stdin) input="$work/pods.json"; cmd=("$GPU_ADMISSION" audit -p "$POLICY" -o json -) ;;
    pretty) input="$work/pretty.json"; cmd=("$GPU_ADMISSION" audit -p "$POLICY" -o json "$input") ;;
    yaml) input="$work/pods.yaml"; cmd=("$GPU_ADMISSION" audit -p "$POLICY" -o json "$input") ;;
  esac
  rc=0
  if [ "$form" = stdin ]; then
    /usr/bin/time -v "${cmd[@]}" <"$input" >"$work/$form.out" 2>"$work/$form.time" || rc=$?
  else
    /usr/bin/time -v "${cmd[@]}" >"$work/$form.out" 2>"$work/$form.time" || rc=$?
  fi
  # Exit 1: violations found (the List has privileged pods); anything else failed.
  if [ "$rc" -ne 1 ]; then
    echo "audit_file.sh: $form: exit $rc" >&2
    cat "$work/$form.time" >&2
    exit 1
  fi
  size_mib=$(awk -v b="$(stat -c %s "$input")" 'BEGIN {printf "%.1f", b / 1048576}')
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/$form.time")
  user=$(awk -F': ' '/User time/ {print $2}' "$work/$form.time")
  sys=$(awk -F': ' '/System time/ {print $2}' "$work/$form.time")
  rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/$form.time")
  rss_mib=$(awk -v k="$rss_kib" 'BEGIN {printf "%.1f", k / 1024}')
  judged=$(jq '.judged.Pod' "$work/$form.out")
  printf '%-7s %6s MiB in  wall %-8s CPU %ss user + %ss sys  peak RSS %6s MiB  pods judged %s\n' \
    "$form" "$size_mib" "$wall" "$user" "$sys" "$rss_mib" "$judged"
  if awk -v r="$rss_mib" -v l="$LIMIT_MIB" 'BEGIN {exit !(r > l)}'; then
    echo "audit_file.sh: $form: peak RSS $rss_mib MiB is over $LIMIT_MIB MiB" >&2
    over=1
  fi
  jq -S 'del(.source, .startedAt, .durationSeconds)' "$work/$form.out" >"$work/$form.result"
done
for form in "${forms[@]}"; do
  cmp -s "$work/file.result" "$work/$form.result" || { echo "audit_file.sh: $form's result differs from the file's" >&2; exit 1; }
done
echo "== the same result from every form; peak RSS bound: $LIMIT_MIB MiB"
exit "$over"
