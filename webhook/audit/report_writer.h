// Keeps the audit's PolicyReports in the cluster (`audit --write-reports`): reads which reports
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
#include "webhook/cluster/kube_client.h"

namespace gpu_admission::webhook::audit {

inline constexpr std::string_view kPolicyReportsPath = "/apis/wgpolicyk8s.io/v1alpha2";

struct WriteCounts {
  size_t created = 0, updated = 0, unchanged = 0, deleted = 0;
};

// The content of a report that a write would change: summary, results without timestamps,
// annotations.
uint64_t report_fingerprint(const Json& report);

class ReportWriter {
 public:
  // `namespaces`: the audit's scope (empty: the whole cluster); reports outside it are left alone.
  ReportWriter(const cluster::KubeClient& client, std::vector<std::string> namespaces);

  // Reads the reports written before. An error when the PolicyReport CRD is not installed (with
  // what to do) or the list fails.
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

  const cluster::KubeClient& client_;
  std::vector<std::string> namespaces_;
  std::map<std::string, Existing> existing_;  // by namespace
  WriteCounts counts_;
};

}  // namespace gpu_admission::webhook::audit
