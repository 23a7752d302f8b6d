// `check`'s machine outputs (check_report.h): JSON (the SPEC's result shape plus additions,
// never renamed), YAML (the mutated objects), JUnit (denials as failures, warn and audit
// findings as system-out, the policy as a property) and PolicyReports (webhook/io/policy_report.h, one per namespace).
#include <cstdio>
#include <map>

#include "policy/base/ids.h"
#include "policy/dra/gpu_request.h"
#include "webhook/cli/check_report.h"
#include "webhook/cli/junit.h"
#include "webhook/io/finding_label.h"
#include "webhook/io/policy_report.h"
#include "webhook/io/terminal_text.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

std::string finding_line(const policy::Finding& f) {
  return std::string(name_of(label_of(f))) + " [" + std::string(policy::name_of(f.rule)) + "] " + f.message + " (at " +
         f.field + ")";
}

Json result_json(const OfflineResult& r) {
  Json out = {{"kind", r.kind}, {"namespace", r.namespace_name}, {"name", r.name}, {"allowed", r.allowed()}};
  if (!r.template_path.empty()) out["template"] = r.template_path;
  Json violations = Json::array();
  Json warnings = Json::array();
  for (const auto& f : r.decision.findings) {
    Json violation = {{"rule", std::string(policy::name_of(f.rule))},
                      {"action", std::string(policy::name_of(f.action))},
                      {"message", f.message},
                      {"field", f.field}};
    if (f.excepted()) violation["exception"] = std::string(f.exception);  // action: what it would have been
    if (f.would_deny()) violation["wouldDeny"] = true;  // observing: enforcement would refuse it
    violations.push_back(std::move(violation));
    if (label_of(f) == FindingLabel::Warn) warnings.push_back("[" + std::string(policy::name_of(f.rule)) + "] " + f.message);
  }
  out["violations"] = violations;
  out["warnings"] = warnings;
  out["patch"] = r.patch;
  if (!r.decision.withheld_patch.empty()) out["withheldPatch"] = policy::patch_to_json(r.decision.withheld_patch);
  if (!r.decision.notices.empty()) out["notices"] = r.decision.notices;
  out["object"] = r.mutated.is_null() ? Json::object() : r.mutated;
  out["source"] = r.source;
  out["exempt"] = r.decision.exempt;
  out["tenant"] = r.decision.tenant ? Json(r.decision.tenant->name) : Json(nullptr);
  out["pool"] = r.decision.pool ? Json(r.decision.pool->name) : Json(nullptr);
  // The effective GPU request as the text output shows it ("2", "1 3/4"), and where it comes from
  // when that is not plain from the resources (DRA claims and extended resources).
  if (!r.decision.exempt) out["gpus"] = policy::gpus_text(r.decision.gpu_slices, r.decision.slices_per_gpu);
  if (!r.decision.gpu_sources.empty()) out["gpuSources"] = r.decision.gpu_sources;
  out["namespaceDefaulted"] = r.namespace_defaulted;
  return out;
}

Json summary_json(const CheckSummary& s) {
  return {{"objects", s.objects}, {"allowed", s.allowed}, {"denied", s.denied},  {"warned", s.warned},
          {"audited", s.audited}, {"skipped", s.skipped}, {"errors", s.errors}};
}

JUnitCase junit_case(const OfflineResult& r) {
  JUnitCase c;
  c.name = object_title(r);
  c.classname = r.source;
  if (r.status == OfflineResult::Status::Skipped) {
    c.skipped = true;
    c.failure_message = r.note;
    return c;
  }
  if (r.status == OfflineResult::Status::Error) {
    c.errored = true;
    c.failure_message = r.note;
    c.failure_text = r.note;
    return c;
  }
  std::string rules;
  for (const auto& f : r.decision.findings) {
    if (label_of(f) != FindingLabel::Deny) {
      c.system_out += finding_line(f) + "\n";  // admitted, but worth a look: warn and audit
      continue;
    }
    if (!rules.empty()) rules += ", ";
    rules += policy::name_of(f.rule);
    c.failure_text += "[" + std::string(policy::name_of(f.rule)) + "] " + f.message + " (at " + f.field + ")\n";
  }
  if (!r.decision.allowed) {
    c.failed = true;
    c.failure_message = "denied by " + rules;
  }
  if (const std::string note = namespace_note(r); !note.empty()) c.system_out += "note: " + note + "\n";
  return c;
}

// The whole object of a span as a report subject: the findings of all its templates.
ReportSubject report_subject(const std::vector<OfflineResult>& results, ObjectSpan span) {
  const OfflineResult& head = results[span.first];
  ReportSubject s{head.api_version, head.kind, head.name, head.uid, ReportSubject::State::Judged, {}, std::nullopt};
  for (size_t i = span.first; i < span.last; ++i) {
    const OfflineResult& r = results[i];
    if (r.status == OfflineResult::Status::Error) s.state = ReportSubject::State::Error;
    else if (r.decision.exempt && s.state == ReportSubject::State::Judged) s.state = ReportSubject::State::Exempt;
    s.findings.insert(s.findings.end(), r.decision.findings.begin(), r.decision.findings.end());
  }
  return s;
}

}  // namespace

void print_json(const std::vector<OfflineResult>& results, const CheckPrintOptions& options) {
  Json doc = {{"policy", options.policy},
              {"results", Json::array()},
              {"skipped", Json::array()},
              {"errors", Json::array()}};
  for (const auto& r : results) {
    if (r.status == OfflineResult::Status::Evaluated) {
      if (printed(r, options)) doc["results"].push_back(result_json(r));
      continue;
    }
    doc[r.status == OfflineResult::Status::Skipped ? "skipped" : "errors"].push_back(
        {{"kind", r.kind}, {"namespace", r.namespace_name}, {"name", r.name}, {"source", r.source}, {"reason", r.note}});
  }
  doc["summary"] = summary_json(summarize(results));
  std::printf("%s\n", to_json_text(doc, 2).c_str());
}

void print_yaml(const std::vector<OfflineResult>& results, const CheckPrintOptions& options) {
  bool first = true;
  for (const auto& r : results) {
    if (r.status != OfflineResult::Status::Evaluated) {
      std::fprintf(stderr, "%s: %s (%s)\n", terminal_text(r.source).c_str(), terminal_text(object_title(r)).c_str(),
                   terminal_text(r.note).c_str());
      continue;
    }
    for (const auto& f : r.decision.findings)
      if (label_of(f) == FindingLabel::Deny && !r.decision.allowed)
        std::fprintf(stderr, "%s: %s denied: [%s] %s\n", terminal_text(r.source).c_str(),
                     terminal_text(object_title(r)).c_str(), std::string(policy::name_of(f.rule)).c_str(),
                     terminal_text(f.message).c_str());
    if (r.repeat || !printed(r, options)) continue;  // repeat: another template of the object printed just before
    if (!first) std::printf("---\n");
    first = false;
    std::printf("%s", to_yaml(r.mutated).c_str());
  }
}

void print_junit(const std::vector<OfflineResult>& results, const CheckPrintOptions& options) {
  JUnitSuite suite{"gpu-admission check", {}, {{"policy", options.policy}}};
  for (const auto& r : results)
    if (printed(r, options)) suite.cases.push_back(junit_case(r));
  std::printf("%s", junit_xml({suite}).c_str());
}

namespace {

void print_reports(const std::vector<OfflineResult>& results, const CheckPrintOptions& options, ReportApi api) {
  PolicyReportOptions report_options;
  report_options.api = api;
  report_options.only_fail = options.only_denied;
  report_options.keep_warn = options.fail_on == FailOn::Warn;  // what fails the run is listed
  std::map<std::string, PolicyReportBuilder> reports;  // by namespace, in name order
  for (const ObjectSpan& span : object_spans(results)) {
    const OfflineResult& head = results[span.first];
    if (head.status == OfflineResult::Status::Skipped || head.namespace_name.empty()) continue;
    auto it = reports.try_emplace(head.namespace_name, head.namespace_name, report_options).first;
    it->second.add(report_subject(results, span));
  }
  bool first = true;
  for (const auto& [ns, builder] : reports) {
    if (!first) std::printf("---\n");
    first = false;
    std::printf("%s", to_yaml(builder.build()).c_str());
  }
}

}  // namespace

void print_policy_reports(const std::vector<OfflineResult>& results, const CheckPrintOptions& options) {
  print_reports(results, options, ReportApi::WgPolicy);
}

void print_open_reports(const std::vector<OfflineResult>& results, const CheckPrintOptions& options) {
  print_reports(results, options, ReportApi::OpenReports);
}

}  // namespace gpu_admission::webhook
