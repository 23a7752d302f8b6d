#!/usr/bin/env bash
# Where the audit's time goes (bench/audit.sh, PROFILE=1): runs `gpu-admission audit -o json`
# once more against the running stand-in under `perf record` (cpu-clock samples with DWARF call
# graphs: the release build keeps no frame pointers) and prints the CPU shares by library, the
# inclusive shares of the stages of an audit (receiving pages, parsing them, re-serialising each
# object, decoding, evaluating, owner bookkeeping, the result and its output), and the
# functions that cost most themselves. The reports are kept in WORK (perf-*.txt).
#
#   bench/audit_profile.sh WORK CORE GPU_ADMISSION POLICY    (WORK holds the stand-in's kubeconfig)
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 WORK CORE GPU_ADMISSION POLICY" >&2; exit 2; }
work="$1" core="$2" gpu_admission="$3" policy="$4"

if ! command -v perf >/dev/null; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y -q linux-perf >/dev/null 2>&1 || true
fi
if ! command -v perf >/dev/null; then
  echo "== where the time goes: perf is not installed (apt-get install linux-perf); no profile"
  exit 1
fi

echo "== where the time goes: perf record (cpu-clock, 250 Hz, DWARF call graphs) of one more audit -o json"
code=0
perf record -q -e cpu-clock -F 250 --call-graph dwarf,16384 -o "$work/perf.data" -- \
  taskset -c "$core" "$gpu_admission" audit --kubeconfig "$work/kubeconfig" -p "$policy" -o json \
  >/dev/null 2>"$work/perf-record.err" || code=$?
if [ "$code" -ge 2 ] || [ ! -s "$work/perf.data" ]; then
  echo "perf record failed (exit $code): $(tail -n 3 "$work/perf-record.err")"
  exit 1
fi
report() { perf report -i "$work/perf.data" --comm gpu-admission "$@" 2>/dev/null | grep -E '^ +[0-9.]+%'; }
report --no-children --sort dso >"$work/perf-dso.txt"
report --children --sort symbol >"$work/perf-children.txt"
report --no-children --sort symbol >"$work/perf-self.txt"

echo "CPU by library (self):"
head -n 8 "$work/perf-dso.txt" | awk '{ printf "  %7s  %s\n", $1, $2 }'

# The first (largest) inclusive share of the functions matching each pattern (symbols carry no
# arguments: the release build has no debug information).
sed -i -E 's/ +- +- *$//; s/ +$//' "$work/perf-children.txt" "$work/perf-self.txt" "$work/perf-dso.txt"
stage() {  # LABEL REGEX
  local share
  share="$(grep -E "$2" "$work/perf-children.txt" | head -n1 | awk '{ print $1 }' || true)"
  printf "  %7s  %s\n" "${share:--}" "$1"
}
echo "stages (inclusive: a stage's share includes what it calls):"
stage "the audit (list pages, judge, result, output)" 'webhook::run_audit$'
stage "receive list pages: KubeClient::get (TLS, cpp-httplib, body append)" 'KubeClient::get$'
stage "  TLS records decrypted: SSL_read" '\] SSL_read$'
stage "  socket reads (read(2), kernel)" '\] (__GI___libc_read|__libc_recv|recv|read)( \(inlined\))?$'
stage "parse each page: decode_list_page (copy into a padded buffer, simdjson DOM)" 'decode_list_page(\[abi:cxx11\])?$'
stage "judge each object: Auditor::add" 'audit::Auditor::add$'
stage "  Auditor::judge (all but reading metadata and owners)" 'audit::Auditor::judge$'
stage "  re-serialise the object: simdjson::to_string (minify)" 'simdjson::(minify|to_string)<simdjson::dom::element>'
stage "  decode and evaluate it: decide_review" 'webhook::decide_review$'
stage "    decode it: decode_pod_json (On-Demand)" 'decode_pod_json'
stage "    ML kinds' templates: decide_templates (DOM, find, minify, decode)" 'decide_templates'
stage "    evaluate the rules: policy::evaluate (when not inlined)" 'policy::evaluate$'
stage "  owner bookkeeping: read_controller" 'audit::read_controller$'
stage "  owner bookkeeping: Auditor::subject_for" 'Auditor::subject_for$'
stage "  owner bookkeeping: OwnerIndex::add" 'OwnerIndex::add$'
stage "  record findings: Auditor::record" 'Auditor::record$'
stage "resolve owners, totals: Auditor::finish" 'Auditor::finish$'
stage "print the result: audit_json and its dump" 'audit_json|print_result'
stage "page faults (kernel: fresh memory for large buffers)" '\] asm_exc_page_fault$'
echo "costliest functions (self):"
head -n 15 "$work/perf-self.txt" | awk '{ share = $1; $1 = ""; sub(/^ +/, ""); printf "  %7s  %s\n", share, substr($0, 1, 130) }'
