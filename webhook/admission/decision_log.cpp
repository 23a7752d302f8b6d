// Decision log lines (see decision_log.h).
#include "webhook/admission/decision_log.h"

#include <string>

#include "policy/base/quoted_value.h"

namespace gpu_admission::webhook {
namespace {

constexpr std::string_view kNone = "none";
// A line lists this many findings, then counts the rest ("moreFindings"), as audit's subjects do:
// every finding's values are bounded, and so is their number.
constexpr size_t kMaxLoggedFindings = 20;

std::string_view decision_name(const policy::Decision& decision) {
  if (!decision.allowed) return "denied";
  return decision.has(policy::Action::Warn) ? "warned" : "audited";
}

}  // namespace

Json finding_json(const policy::Finding& finding) {
  Json out = {{"rule", policy::name_of(finding.rule)},
              {"action", policy::name_of(finding.action)},
              {"field", finding.field},
              {"message", finding.message}};
  if (finding.excepted()) out["exception"] = finding.exception;  // `action`: what it would have been
  if (finding.would_deny()) out["wouldDeny"] = true;  // observing: enforcement would refuse it
  return out;
}

Json request_log_fields(const AdmissionRequest& request, std::string_view name) {
  return {{"uid", request.uid},
          {"namespace", policy::bounded(request.namespace_name)},
          {"name", policy::bounded(name.empty() ? request.name : name)},
          {"kind", request.kind},
          {"operation", request.operation},
          {"dryRun", request.dry_run},
          {"user", request.username}};
}

void log_decision(Logger& logger, const AdmissionRequest& request, std::string_view name,
                  const policy::Decision& decision) {
  if (decision.findings.empty()) return;
  const LogLevel level = decision.allowed ? LogLevel::Info : LogLevel::Warn;
  if (!logger.enabled(level)) return;
  Json findings = Json::array();
  for (size_t i = 0; i < decision.findings.size() && i < kMaxLoggedFindings; ++i)
    findings.push_back(finding_json(decision.findings[i]));
  Json fields = request_log_fields(request, name);
  fields["decision"] = decision_name(decision);
  fields["mode"] = policy::name_of(decision.mode);
  fields["tenant"] = decision.tenant != nullptr ? std::string_view(decision.tenant->name)
                     : decision.tenant_unknown ? std::string_view("unknown")
                                               : kNone;
  fields["pool"] = decision.pool != nullptr ? std::string_view(decision.pool->name) : kNone;
  if (!decision.commit_point.empty()) fields["commitPoint"] = decision.commit_point;
  fields["findings"] = std::move(findings);
  if (decision.findings.size() > kMaxLoggedFindings) fields["moreFindings"] = decision.findings.size() - kMaxLoggedFindings;
  logger.log(level, decision.allowed ? "admitted with findings" : "denied", fields);
}

}  // namespace gpu_admission::webhook
