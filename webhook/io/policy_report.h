// Reports from judged objects, in either report API (ReportApi): PolicyReports
// (wgpolicyk8s.io/v1alpha2, the Kubernetes policy working group's format) or OpenReports' Reports
// (openreports.io/v1alpha1, its successor, where Kyverno and Kubewarden are moving): the same
// content, the latter with `source` also at the report's top. One report per namespace, named
// `gpu-admission`, with a `summary` and the `results` of its fail and warn findings. Used by
// `check -o policyreport|openreports` and by `audit`, which judges the cluster's objects page by
// page: the builder keeps at most `max_results` results and counts the rest, so memory does not
// grow with the namespace.
//
// Counting (docs/design.md):
// - fail: deny findings; warn: warn and audit findings (an audit finding is a violation that
//   was admitted and recorded; `properties.action` says which it was). fail + warn is the number
//   of results before the cap.
// - pass: judged objects without any result; skip: objects exempt from the policy (exempt
//   namespace or username); error: objects that could not be judged (they have no result).
// - severity: `high` for a deny finding of a security rule (category security in
//   policy/base/rules.def: policy::is_security_rule), `medium` for every other result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/json.h"
#include "policy/evaluation/decision.h"

namespace gpu_admission::webhook {

inline constexpr size_t kPolicyReportMaxResults = 1000;
inline constexpr std::string_view kPolicyReportName = "gpu-admission";

enum class ReportApi : uint8_t { WgPolicy, OpenReports };

// How each report API spells its reports.
struct ReportApiInfo {
  ReportApi api;
  std::string_view api_version;  // also how --report-api names it
  std::string_view group;
  std::string_view version;
  std::string_view kind;         // of the namespaced report
  std::string_view resource;     // its plural
  std::string_view title;        // in messages: "PolicyReport", "OpenReports Report"
};
const ReportApiInfo& report_api_info(ReportApi api);
// The API `api_version` names ("openreports.io/v1alpha1", "wgpolicyk8s.io/v1alpha2"); nullopt
// for any other.
std::optional<ReportApi> report_api_named(std::string_view api_version);
// The APIs in the order a cluster's is chosen: OpenReports first.
inline constexpr ReportApi kReportApisByPreference[] = {ReportApi::OpenReports, ReportApi::WgPolicy};

// One judged object of the namespace: the object a person edits (a workload with several
// templates is one subject with the findings of all of them).
struct ReportSubject {
  enum class State : uint8_t { Judged, Exempt, Error };
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;  // empty when unknown (files without metadata.uid)
  State state = State::Judged;
  std::vector<policy::Finding> findings;
  std::optional<uint32_t> pods;  // the subject's pods (audit): `properties.pods` of its results
};

struct PolicyReportOptions {
  size_t max_results = kPolicyReportMaxResults;
  bool only_fail = false;                     // results of deny findings only (the summary counts all)
  bool keep_warn = false;                     // with only_fail: warn findings' results too (not audit)
  std::optional<int64_t> timestamp_seconds;   // on every result when set (offline `check` leaves it out)
  ReportApi api = ReportApi::WgPolicy;
};

class PolicyReportBuilder {
 public:
  explicit PolicyReportBuilder(std::string namespace_name, PolicyReportOptions options = {});

  void add(const ReportSubject& subject);
  // `count` more subjects in `state` without findings (passing, exempt or unreadable objects the
  // caller only counted).
  void add_counted(ReportSubject::State state, size_t count);
  // The report object (apiVersion, kind, metadata, [source,] summary, results).
  Json build() const;

  const std::string& namespace_name() const { return namespace_; }

 private:
  struct Kept {
    size_t sequence;
    Json result;
  };
  void keep(std::vector<Kept>& list, Json result);

  std::string namespace_;
  PolicyReportOptions options_;
  size_t pass_ = 0, fail_ = 0, warn_ = 0, error_ = 0, skip_ = 0;
  size_t sequence_ = 0, dropped_ = 0;
  std::vector<Kept> fails_, warns_;  // each at most max_results; fails win when cut
};

// The report of one namespace from its judged objects.
Json policy_report(std::string_view namespace_name, const std::vector<ReportSubject>& subjects,
                   const PolicyReportOptions& options = {});

}  // namespace gpu_admission::webhook
