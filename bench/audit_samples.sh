#!/usr/bin/env bash
# Checks the sample the audit benchmark's stand-in wrote (--samples-out DIR: one `kind: List` file
# per shape and violation, each with its Namespace, top-level object and one pod, and
# expected-rules.json) against the policy with `gpu-admission check`, so that the cluster is what
# bench/audit.sh claims before anything is timed:
#   - judged as they are (--no-mutate), every object of a file finds exactly the rule the stand-in
#     injected into it, or nothing when it injected none;
#   - with /mutate, no stored pod gets a patch: it already carries what /mutate adds.
# Exit 1 with the objects that differ.
#
#   bench/audit_samples.sh GPU_ADMISSION POLICY DIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 GPU_ADMISSION POLICY DIR" >&2; exit 2; }
gpu_admission="$1" policy="$2" dir="$3"
rules="$dir/expected-rules.json"
[ -f "$rules" ] || { echo "audit_samples.sh: no $rules" >&2; exit 2; }

# Both runs read every sample at once; each result's source names its file.
run_check() {  # OUTPUT_FILE [FLAGS...]
  local out="$1" code=0
  shift
  "$gpu_admission" check -p "$policy" -o json "$@" "$dir"/*.json >"$out" 2>"$out.err" || code=$?
  if [ "$code" -ge 2 ]; then echo "audit_samples.sh: check $* failed (exit $code): $(head -c 600 "$out.err")" >&2; exit 1; fi
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run_check "$work/judged.json" --no-mutate
run_check "$work/mutated.json"

files="$(jq 'length' "$rules")"
# Objects whose rules differ from their file's injected one, then stored pods /mutate would patch.
report="$(jq -r --slurpfile rules "$rules" --slurpfile mutated "$work/mutated.json" '
  def file_of: .source | sub(":[0-9]+ .*$"; "") | sub("^.*/"; "");
  [.results[] | select(.kind != "Namespace")] as $judged
  | ($judged | length) as $objects
  | [$judged[] | (file_of) as $f | ([.violations[].rule] | unique | join(",")) as $found
     | ($rules[0][$f] // "?") as $expect | select($found != $expect)
     | "sample \($f): \(.kind)/\(.name) found [\($found)], expected [\($expect)]"]
    + [$mutated[0].results[] | select(.kind == "Pod" and ((.patch // []) | length) > 0)
       | "sample \(file_of): /mutate would still patch the stored pod \(.name): \(.patch | map(.op + " " + .path) | join(", "))"]
  | "\($objects)", .[]' "$work/judged.json")"
objects="$(head -n1 <<<"$report")"
failures="$(tail -n +2 <<<"$report")"
if [ -n "$failures" ]; then
  echo "$failures"
  echo "samples: $(wc -l <<<"$failures") of $objects objects in $files files differ from what the stand-in injected (policy $policy)"
  exit 1
fi
echo "samples: $files files, $objects objects checked with gpu-admission check: each finds exactly its injected rule (or none), no stored pod needs a /mutate patch"
