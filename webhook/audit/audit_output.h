// How an audit's result is shown: a text report for people (what was judged, totals per
// tenant, rule and action, then each violating object with its pods and findings), JSON for
// scripts, and reports (one per namespace with findings, named gpu-admission: wgpolicyk8s.io
// PolicyReports or OpenReports Reports) for the cluster and the tools that read them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "webhook/audit/audit_result.h"
#include "webhook/io/policy_report.h"

namespace gpu_admission::webhook::audit {

// A report's serialized size stays under this (etcd stores objects up to ~1.5 MiB): results
// past it are left out, as past the 1,000-result cap, and the summary still counts them.
inline constexpr size_t kMaxReportBytes = 1u << 20;

std::string audit_text(const AuditResult& result);
Json audit_json(const AuditResult& result);

// One report of `api` per namespace that has a finding, in namespace order, each handed to `use`
// as it is built (one report is held at a time); `timestamp_seconds` goes on every result.
void for_each_policy_report(const AuditResult& result, int64_t timestamp_seconds,
                            const std::function<void(Json&& report)>& use, ReportApi api = ReportApi::WgPolicy);

// Drops results from the end of `report` until its JSON is at most `max_bytes` (the
// gpu-admission.io/results-truncated annotation says how many are listed); true when it fits.
bool bound_report_size(Json& report, size_t max_bytes = kMaxReportBytes);

}  // namespace gpu_admission::webhook::audit
