#include "webhook/audit/audit_output.h"

#include <cstdio>
#include <map>

#include "policy/base/ids.h"
#include "policy/base/quoted_value.h"
#include "webhook/io/policy_report.h"
#include "webhook/io/terminal_text.h"

namespace gpu_admission::webhook::audit {
namespace {

// Names come from objects (an ownerReference's kind and name are any string): the text output
// escapes them, and messages, fields and errors, for a terminal (webhook/io/terminal_text.h), so a
// line of the report stays one line and reads as written.
std::string subject_name(const AuditSubject& s) {
  using policy::bounded;
  return terminal_text(bounded(s.namespace_name) + "/" + bounded(s.ref.kind) + "/" + bounded(s.ref.name));
}

std::string format(const char* pattern, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

void append_counts(std::string& out, const char* title, const std::map<std::string, size_t>& counts) {
  if (counts.empty()) return;
  out += title;
  bool first = true;
  for (const auto& [what, n] : counts) {
    out += (first ? " " : ", ") + std::to_string(n) + " " + what;
    first = false;
  }
  out += "\n";
}

Json finding_json(const policy::Finding& f) {
  Json j = {{"rule", std::string(policy::name_of(f.rule))},
            {"action", std::string(name_of(label_of(f)))},
            {"message", f.message},
            {"field", f.field}};
  if (f.excepted()) j["exception"] = std::string(f.exception);
  return j;
}

}  // namespace

std::string audit_text(const AuditResult& r) {
  std::string out = "audit of " + terminal_text(r.source) + format(" in %.1f s\n", r.duration_seconds);
  append_counts(out, "judged:", r.judged);
  append_counts(out, "not judged:", r.skipped);
  for (const auto& note : r.notes) out += "note: " + terminal_text(note) + "\n";
  if (r.totals.empty()) {
    out += "no violations\n";
  } else {
    out += format("\n%-20s %-20s %-9s %8s %8s\n", "TENANT", "RULE", "ACTION", "OBJECTS", "PODS");
    for (const auto& t : r.totals)
      out += format("%-20s %-20s %-9s %8zu %8zu\n", t.tenant.c_str(), std::string(policy::name_of(t.rule)).c_str(),
                    std::string(name_of(t.label)).c_str(), t.objects, t.pods);
  }
  for (const auto& s : r.subjects) {
    out += "\n" + subject_name(s) + format(" (tenant %s, %u pod%s, %u violating)\n", s.tenant.c_str(), s.pods,
                                           s.pods == 1 ? "" : "s", s.violating_pods);
    for (const auto& f : s.findings)
      out += "  " + std::string(name_of(label_of(f))) + " " + std::string(policy::name_of(f.rule)) + ": " +
             terminal_text(f.message) + (f.field.empty() ? "" : " (" + terminal_text(f.field) + ")") +
             (f.excepted() ? " [exception " + terminal_text(f.exception) + "]" : "") + "\n";
    if (s.more_findings > 0) out += "  ... and " + std::to_string(s.more_findings) + " more findings\n";
    if (!s.error.empty()) out += "  error: " + terminal_text(s.error) + "\n";
  }
  out += format("\n%zu violating objects, %zu objects with errors\n", r.violating(), r.errors());
  return out;
}

Json audit_json(const AuditResult& r) {
  Json totals = Json::array();
  for (const auto& t : r.totals)
    totals.push_back({{"tenant", t.tenant},
                      {"rule", std::string(policy::name_of(t.rule))},
                      {"action", std::string(name_of(t.label))},
                      {"objects", t.objects},
                      {"pods", t.pods}});
  Json objects = Json::array();
  for (const auto& s : r.subjects) {
    Json findings = Json::array();
    for (const auto& f : s.findings) findings.push_back(finding_json(f));
    Json o = {{"namespace", s.namespace_name}, {"apiVersion", s.ref.api_version}, {"kind", s.ref.kind},
              {"name", s.ref.name},            {"uid", s.ref.uid},                 {"tenant", s.tenant},
              {"pods", s.pods},                {"violatingPods", s.violating_pods}, {"findings", findings}};
    if (s.more_findings > 0) o["moreFindings"] = s.more_findings;
    if (!s.error.empty()) o["error"] = s.error;
    objects.push_back(std::move(o));
  }
  return {{"source", r.source},          {"startedAt", r.started_at}, {"durationSeconds", r.duration_seconds},
          {"judged", r.judged},          {"skipped", r.skipped},      {"notes", r.notes},
          {"totals", totals},            {"objects", objects},        {"violatingObjects", r.violating()},
          {"objectsWithErrors", r.errors()}};
}

void for_each_policy_report(const AuditResult& r, int64_t timestamp_seconds,
                            const std::function<void(Json&& report)>& use, ReportApi api) {
  PolicyReportOptions options;
  options.timestamp_seconds = timestamp_seconds;
  options.api = api;
  // Subjects are sorted by namespace: each namespace's run is one report.
  for (size_t begin = 0; begin < r.subjects.size();) {
    const std::string& ns = r.subjects[begin].namespace_name;
    size_t end = begin;
    PolicyReportBuilder builder(ns, options);
    bool any = false;
    for (; end < r.subjects.size() && r.subjects[end].namespace_name == ns; ++end) {
      const AuditSubject& s = r.subjects[end];
      if (!s.violates()) continue;  // an unreadable object: counted as an error below
      any = true;
      builder.add(ReportSubject{s.ref.api_version, s.ref.kind, s.ref.name, s.ref.uid, ReportSubject::State::Judged,
                                s.findings, s.pods});
    }
    begin = end;
    if (!any) continue;
    if (const auto it = r.namespaces.find(ns); it != r.namespaces.end()) {
      builder.add_counted(ReportSubject::State::Judged, it->second.passed);
      builder.add_counted(ReportSubject::State::Exempt, it->second.exempt);
      builder.add_counted(ReportSubject::State::Error, it->second.errors);
    }
    Json report = builder.build();
    bound_report_size(report);
    use(std::move(report));
  }
}

bool bound_report_size(Json& report, size_t max_bytes) {
  size_t size = report.dump().size();
  if (size <= max_bytes) return true;
  Json& results = report["results"];
  const size_t before = results.size();
  // Each result's own size, dropped from the end until the whole fits (plus the annotation).
  constexpr size_t kAnnotationRoom = 200;
  while (!results.empty() && size + kAnnotationRoom > max_bytes) {
    size -= results.back().dump().size() + 1;
    results.erase(results.size() - 1);
  }
  const size_t all = report["summary"]["fail"].get<size_t>() + report["summary"]["warn"].get<size_t>();
  report["metadata"]["annotations"]["gpu-admission.io/results-truncated"] =
      std::to_string(results.size()) + " of " + std::to_string(std::max(all, before)) + " results listed";
  return report.dump().size() <= max_bytes;
}

}  // namespace gpu_admission::webhook::audit
