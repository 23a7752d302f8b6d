// PolicyReport building (policy_report.h): each finding becomes a result through two tables,
// its label (finding_label.h) -> the report's `result`, and its rule -> whether it is a
// security rule (for `severity`).
#include "webhook/io/policy_report.h"

#include <algorithm>
#include <array>

#include "policy/base/ids.h"
#include "policy/base/quoted_value.h"
#include "webhook/io/finding_label.h"

namespace gpu_admission::webhook {
namespace {

using policy::RuleId;


// What a label becomes in a report. An audit finding is a violation that was admitted and
// recorded: a warning in the report's terms. An excepted one was not judged, by the policy's
// own choice: a skip (its properties name the exception).
struct LabelRow {
  FindingLabel label;
  std::string_view result;  // "fail", "warn" or "skip"
  bool fails;               // counts in summary.fail
  bool skips;               // counts in summary.skip (neither: summary.warn)
};
constexpr std::array<LabelRow, kFindingLabelCount> kLabelRows = {{
    {FindingLabel::Deny, "fail", true, false},
    {FindingLabel::Warn, "warn", false, false},
    {FindingLabel::Audit, "warn", false, false},
    {FindingLabel::Excepted, "skip", false, true},
}};

constexpr std::array<ReportApiInfo, 2> kReportApis = {{
    {ReportApi::WgPolicy, "wgpolicyk8s.io/v1alpha2", "wgpolicyk8s.io", "v1alpha2", "PolicyReport", "policyreports",
     "PolicyReport"},
    {ReportApi::OpenReports, "openreports.io/v1alpha1", "openreports.io", "v1alpha1", "Report", "reports",
     "OpenReports Report"},
}};

const LabelRow& row_of(FindingLabel label) {
  for (const auto& row : kLabelRows)
    if (row.label == label) return row;
  return kLabelRows.back();
}

// Names are bounded like messages (policy/base/quoted_value.h): an object's own are at most 253
// bytes and shown whole, and what a file or an ownerReference makes up cannot fill the report.
Json resource_of(const ReportSubject& s, std::string_view namespace_name) {
  using policy::bounded;
  Json ref = {{"apiVersion", bounded(s.api_version)},
              {"kind", bounded(s.kind)},
              {"namespace", bounded(namespace_name)},
              {"name", bounded(s.name)}};
  if (!s.uid.empty()) ref["uid"] = bounded(s.uid);
  return ref;
}

}  // namespace

const ReportApiInfo& report_api_info(ReportApi api) {
  for (const auto& info : kReportApis)
    if (info.api == api) return info;
  return kReportApis.front();
}

std::optional<ReportApi> report_api_named(std::string_view api_version) {
  for (const auto& info : kReportApis)
    if (info.api_version == api_version) return info.api;
  return std::nullopt;
}

PolicyReportBuilder::PolicyReportBuilder(std::string namespace_name, PolicyReportOptions options)
    : namespace_(std::move(namespace_name)), options_(options) {}

void PolicyReportBuilder::keep(std::vector<Kept>& list, Json result) {
  if (list.size() >= options_.max_results) {
    ++dropped_;
    return;
  }
  list.push_back({sequence_++, std::move(result)});
}

void PolicyReportBuilder::add_counted(ReportSubject::State state, size_t count) {
  (state == ReportSubject::State::Error ? error_ : state == ReportSubject::State::Exempt ? skip_ : pass_) += count;
}

void PolicyReportBuilder::add(const ReportSubject& subject) {
  if (subject.state == ReportSubject::State::Error) {
    ++error_;
    return;
  }
  if (subject.state == ReportSubject::State::Exempt) {
    ++skip_;
    return;
  }
  if (subject.findings.empty()) {
    ++pass_;
    return;
  }
  for (const auto& f : subject.findings) {
    const FindingLabel label = label_of(f);
    const LabelRow& row = row_of(label);
    (row.fails ? fail_ : row.skips ? skip_ : warn_)++;
    if (options_.only_fail && !row.fails && !(options_.keep_warn && label == FindingLabel::Warn)) continue;
    Json result = {{"policy", kPolicyReportName},
                   {"rule", std::string(policy::name_of(f.rule))},
                   {"result", row.result},
                   {"severity", row.fails && policy::is_security_rule(f.rule) ? "high" : "medium"},
                   {"message", f.message},
                   {"source", "gpu-admission"},
                   {"scored", true},
                   {"resources", Json::array({resource_of(subject, namespace_)})},
                   {"properties", {{"field", f.field}, {"action", std::string(name_of(label))}}}};
    if (f.excepted()) result["properties"]["exception"] = std::string(f.exception);
    if (subject.pods) result["properties"]["pods"] = std::to_string(*subject.pods);
    if (options_.timestamp_seconds) result["timestamp"] = {{"seconds", *options_.timestamp_seconds}, {"nanos", 0}};
    keep(row.fails ? fails_ : warns_, std::move(result));
  }
}

Json PolicyReportBuilder::build() const {
  // Fails first when the cap cut something; otherwise the order the findings came in.
  std::vector<const Kept*> kept;
  for (const auto& k : fails_) kept.push_back(&k);
  for (const auto& k : warns_) {
    if (kept.size() >= options_.max_results) break;
    kept.push_back(&k);
  }
  const size_t total_kept = fails_.size() + warns_.size();
  if (dropped_ == 0 && total_kept <= options_.max_results)
    std::sort(kept.begin(), kept.end(), [](const Kept* a, const Kept* b) { return a->sequence < b->sequence; });
  Json results = Json::array();
  for (const Kept* k : kept) results.push_back(k->result);

  Json metadata = {{"name", kPolicyReportName},
                   {"namespace", policy::bounded(namespace_)},
                   {"labels", {{"app.kubernetes.io/managed-by", "gpu-admission"}}}};
  const size_t all = dropped_ + total_kept;
  if (results.size() < all)
    metadata["annotations"] = {{"gpu-admission.io/results-truncated",
                                std::to_string(results.size()) + " of " + std::to_string(all) + " results listed"}};
  const ReportApiInfo& api = report_api_info(options_.api);
  Json report = {{"apiVersion", api.api_version}, {"kind", api.kind}, {"metadata", metadata}};
  // OpenReports names the engine once for the report too (each result still carries it).
  if (options_.api == ReportApi::OpenReports) report["source"] = "gpu-admission";
  report["summary"] = {{"pass", pass_}, {"fail", fail_}, {"warn", warn_}, {"error", error_}, {"skip", skip_}};
  report["results"] = std::move(results);
  return report;
}

Json policy_report(std::string_view namespace_name, const std::vector<ReportSubject>& subjects,
                   const PolicyReportOptions& options) {
  PolicyReportBuilder builder(std::string(namespace_name), options);
  for (const auto& s : subjects) builder.add(s);
  return builder.build();
}

}  // namespace gpu_admission::webhook
