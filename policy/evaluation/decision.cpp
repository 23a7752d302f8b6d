#include "policy/evaluation/decision.h"

#include <algorithm>

namespace gpu_admission::policy {

void Decision::clear() {
  allowed = true;
  exempt = false;
  exempt_by = {};
  tenant = nullptr;
  tenant_unknown = false;
  pool = nullptr;
  findings.clear();
  patch.clear();
  withheld_patch.clear();
  notices.clear();
  mutated = {};
  gpu_slices = 0;
  slices_per_gpu = 7;
  commit_point = {};
  gpu_sources.clear();
}

bool Decision::has(Action action) const {
  return std::any_of(findings.begin(), findings.end(), [&](const Finding& f) { return f.action == action && !f.excepted(); });
}

void keep_new_findings(Decision& decision, const Decision& before) {
  auto seen_before = [&](const Finding& f) {
    return std::any_of(before.findings.begin(), before.findings.end(),
                       [&](const Finding& b) { return b.rule == f.rule && b.field == f.field && b.message == f.message; });
  };
  decision.findings.erase(std::remove_if(decision.findings.begin(), decision.findings.end(), seen_before),
                          decision.findings.end());
  decision.allowed = !decision.has(Action::Deny);
}

void merge_template_decision(Decision& whole, const Decision& one, bool first) {
  if (first) {
    whole.tenant = one.tenant;
    whole.pool = one.pool;
    whole.slices_per_gpu = one.slices_per_gpu;
  }
  if (one.exempt) {
    whole.exempt = true;
    whole.exempt_by = one.exempt_by;
  }
  whole.allowed = whole.allowed && one.allowed;
  whole.gpu_slices = std::max(whole.gpu_slices, one.gpu_slices);
  for (size_t i = 0; i < kMutationCount; ++i) whole.mutated[i] = whole.mutated[i] || one.mutated[i];
  whole.findings.insert(whole.findings.end(), one.findings.begin(), one.findings.end());
  whole.patch.append(one.patch);
  whole.withheld_patch.append(one.withheld_patch);
  whole.notices.insert(whole.notices.end(), one.notices.begin(), one.notices.end());
}

}  // namespace gpu_admission::policy
