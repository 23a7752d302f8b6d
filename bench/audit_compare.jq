# Compares an audit's JSON result ($a[0], `gpu-admission audit -o json`) with the stand-in's
# independent count ($e[0], expected.json of bench/audit_standin.cpp): totals per tenant, rule and
# action (objects and pods), violating objects per namespace, objects judged per kind, objects
# not judged per reason, and each violating object (its rules, pods and violating pods). Prints what differs (at most 20 lines of
# each) and, last, a line starting with MATCH or MISMATCH. Used by bench/audit.sh:
#   jq -n -r --slurpfile a audit.json --slurpfile e expected.json -f bench/audit_compare.jq
def first20: if length > 20 then .[:20] + ["... and \(length - 20) more"] else . end;

$a[0] as $A | $e[0] as $E
| ($A.totals | map({key: "\(.tenant) \(.rule) \(.action)", value: {objects, pods}}) | from_entries) as $at
| ($E.totals | map({key: "\(.tenant) \(.rule) \(.action)", value: {objects, pods}}) | from_entries) as $et
| [($at + $et | keys[]) as $k | select($at[$k] != $et[$k])
   | "totals \($k): audit \($at[$k] // "none" | tojson), expected \($et[$k] // "none" | tojson)"] as $totals
| ($A.objects | map(select(.findings | length > 0)) | group_by(.namespace)
   | map({key: .[0].namespace, value: length}) | from_entries) as $an
| [($an + $E.namespaces | keys[]) as $k | select(($an[$k] // 0) != ($E.namespaces[$k] // 0))
   | "namespace \($k): audit \($an[$k] // 0) violating objects, expected \($E.namespaces[$k] // 0)"] as $namespaces
| [($A.judged + $E.judged | keys[]) as $k | select(($A.judged[$k] // 0) != ($E.judged[$k] // 0))
   | "judged \($k): audit \($A.judged[$k] // 0), expected \($E.judged[$k] // 0)"] as $judged
| [($A.skipped + $E.skipped | keys[]) as $k | select(($A.skipped[$k] // 0) != ($E.skipped[$k] // 0))
   | "not judged, \($k): audit \($A.skipped[$k] // 0), expected \($E.skipped[$k] // 0)"] as $skipped
| ($A.objects | map({key: "\(.namespace)/\(.kind)/\(.name)",
                     value: {rules: ([.findings[].rule] | unique), pods, violatingPods}}) | from_entries) as $ao
| ($E.objects | map({key: "\(.namespace)/\(.kind)/\(.name)", value: {rules: [.rule], pods, violatingPods}})
   | from_entries) as $eo
| [($ao + $eo | keys[]) as $k | select($ao[$k] != $eo[$k])
   | "object \($k): audit \($ao[$k] // "not reported" | tojson), expected \($eo[$k] // "not violating" | tojson)"] as $objects
| [$A.objects[] | select(.error) | "error: \(.namespace)/\(.kind)/\(.name): \(.error)"] as $errors
| ([$at[].pods] | add // 0) as $apods | ([$et[].pods] | add // 0) as $epods
| "totals: \($at | length) rows in the audit, \($et | length) expected; \($totals | length) differ",
  ($totals | first20[]),
  "violating objects per namespace: \($an | length) namespaces in the audit, \($E.namespaces | length) expected; \($namespaces | length) differ",
  ($namespaces | first20[]),
  "judged per kind: \($judged | length) kinds differ", ($judged | first20[]),
  "violating objects: \($ao | length) in the audit, \($eo | length) expected; \($objects | length) differ",
  ($objects | first20[]),
  "objects with errors: \($errors | length)", ($errors | first20[]),
  "not judged per reason: \($skipped | length) reasons differ", ($skipped | first20[]),
  (if ($totals + $namespaces + $judged + $skipped + $objects + $errors | length) == 0
   then "MATCH: \($ao | length) violating objects and \($apods) violating pods per tenant and rule, as injected"
   else "MISMATCH: \($totals | length) totals, \($namespaces | length) namespaces, \($judged | length) kinds, \($skipped | length) not-judged reasons, \($objects | length) objects differ, \($errors | length) errors (audit \($apods) violating pods, expected \($epods))"
   end)
