// Keeps the audit's reports in the cluster (`audit --write-reports`), in one report API (an
// OpenReports Report or a wgpolicyk8s.io PolicyReport: choose_report_api): reads which reports
// gpu-admission wrote before (label app.kubernetes.io/managed-by=gpu-admission, name
// gpu-admission), creates the new ones, updates those whose content changed (summary, results,
// annotations; result timestamps alone are not a change, so a second run over an unchanged
// cluster writes nothing) and deletes those of namespaces that no longer have findings. Only a
// fingerprint of each existing report is held, never the reports themselves.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "webhook/audit/audit_result.h"
#include "webhook/cluster/kube_client.h"
#include "webhook/io/policy_report.h"

namespace gpu_admission::webhook::audit {

// The report API to write: `asked` when given (--report-api); else the first the cluster serves
// (discovery), OpenReports before wgpolicyk8s. An error when it serves neither (naming both CRDs
// and what to do) or discovery fails.
std::optional<std::string> choose_report_api(const cluster::KubeClient& client, std::optional<ReportApi> asked,
                                             ReportApi& out);

struct WriteCounts {
  size_t created = 0, updated = 0, unchanged = 0, deleted = 0;
};

// The content of a report that a write would change: summary, results without timestamps,
// annotations.
uint64_t report_fingerprint(const Json& report);

class ReportWriter {
 public:
  // `namespaces`: the audit's scope (empty: the whole cluster); reports outside it are left alone.
  ReportWriter(const cluster::KubeClient& client, std::vector<std::string> namespaces,
               ReportApi api = ReportApi::WgPolicy);

  // Reads the reports written before. An error when the API's CRD is not installed (with what
  // to do) or the list fails.
  std::optional<std::string> begin();
  // Creates or updates the report of its namespace when its content changed.
  std::optional<std::string> write(const Json& report);
  // Deletes the earlier reports of namespaces that got none in this run.
  std::optional<std::string> finish();

  const WriteCounts& counts() const { return counts_; }

 private:
  struct Existing {
    std::string resource_version;
    uint64_t fingerprint = 0;
    bool kept = false;  // this run wrote or confirmed it
  };
  std::optional<std::string> list_page(const std::string& path, std::string& continue_token);
  std::optional<std::string> update(const std::string& ns, Json report, Existing& existing);
  std::string reports_path(std::string_view ns) const;

  const cluster::KubeClient& client_;
  std::vector<std::string> namespaces_;
  ReportApi api_;
  std::string api_path_;  // /apis/GROUP/VERSION
  std::map<std::string, Existing> existing_;  // by namespace
  WriteCounts counts_;
};

// The whole of `--write-reports`: chooses the API (choose_report_api), writes `result`'s reports
// there (one per namespace with findings, `timestamp` on their results) and deletes those of
// namespaces without findings. When the API was chosen by discovery (`asked` empty), also
// deletes gpu-admission's reports in the other API if the cluster serves it. `api` and `counts`
// say what was done.
std::optional<std::string> write_reports(const cluster::KubeClient& client, const std::vector<std::string>& namespaces,
                                         std::optional<ReportApi> asked, const AuditResult& result, int64_t timestamp,
                                         ReportApi& api, WriteCounts& counts);

}  // namespace gpu_admission::webhook::audit
