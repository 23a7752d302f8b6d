// The metrics of `audit --interval` (served on --metrics-listen): the last run's violations per
// tenant, rule and action (excepted findings under action="excepted") and judged objects per
// kind, replaced whole by each run so a fixed violation's series disappears; when the last run
// ended, how long it took and whether it succeeded; the build. A failed run keeps the previous
// run's counts (they are the last known state) and sets last_run_success to 0.
#pragma once

#include <memory>
#include <string>

#include "webhook/audit/audit_result.h"

namespace gpu_admission::webhook::audit {

class AuditMetrics {
 public:
  AuditMetrics();
  ~AuditMetrics();

  void succeeded(const AuditResult& result, int64_t finished_at);
  void failed(double duration_seconds, int64_t finished_at);
  // The text exposition format.
  std::string serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu_admission::webhook::audit
