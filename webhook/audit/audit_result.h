// What one audit found: the judged objects counted by kind, the violating objects (each at the
// object a person edits, with its pods), totals per tenant, rule and action, and per-namespace
// counts for the PolicyReports. Built by the Auditor (auditor.h), printed by audit_output.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy/base/ids.h"
#include "policy/evaluation/decision.h"
#include "webhook/audit/owner_index.h"
#include "webhook/io/finding_label.h"

namespace gpu_admission::webhook::audit {

// A subject keeps at most this many distinct findings (its pods usually repeat the same ones).
inline constexpr size_t kMaxSubjectFindings = 20;

// Violating pods of a subject, per rule and label.
struct RulePods {
  policy::RuleId rule;
  FindingLabel label;
  uint32_t pods = 0;
};

// One object a person edits, with what was judged of it: its own pod templates and its pods.
struct AuditSubject {
  ObjectRef ref;
  std::string namespace_name;
  std::string tenant = "none";         // the tenant its pods were judged in ("none": no tenant)
  uint32_t pods = 0;                   // its pods that were judged
  uint32_t violating_pods = 0;         // of them, those with a finding
  bool exempt = false;                 // in an exempt namespace (nothing judged)
  std::string error;                   // something of it could not be judged: the first reason
  std::vector<policy::Finding> findings;  // distinct by rule, label and message; the first field kept
  size_t more_findings = 0;            // distinct findings beyond kMaxSubjectFindings
  std::vector<RulePods> rule_pods;

  bool violates() const { return !findings.empty(); }
};

struct AuditTotal {
  std::string tenant;
  policy::RuleId rule;
  FindingLabel label;
  size_t objects = 0;  // subjects with a finding of this rule and label
  size_t pods = 0;     // their pods with one
};

// Objects of a namespace that end in its report's summary without a result.
struct NamespaceCounts {
  size_t passed = 0, exempt = 0, errors = 0;
};

struct AuditResult {
  std::string source;                  // "cluster https://..." or "files a.yaml, b.json"
  int64_t started_at = 0;              // Unix seconds
  double duration_seconds = 0;
  std::map<std::string, size_t> judged;   // kind -> objects judged
  std::map<std::string, size_t> skipped;  // why -> objects not judged
  std::vector<std::string> notes;      // kinds not served, facts that could not be read
  std::vector<AuditTotal> totals;      // sorted by tenant, rule, label
  // Subjects with a finding or an error, sorted by namespace, kind and name.
  std::vector<AuditSubject> subjects;
  std::map<std::string, NamespaceCounts> namespaces;  // every namespace with a judged object

  size_t violating() const;
  size_t errors() const;
};

}  // namespace gpu_admission::webhook::audit
