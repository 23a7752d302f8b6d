#include "policy/decision.h"

#include <algorithm>

namespace gpu_admission::policy {

void Decision::clear() {
  allowed = true;
  exempt = false;
  exempt_by = {};
  tenant = nullptr;
  pool = nullptr;
  findings.clear();
  patch.clear();
  mutated = {};
  gpu_slices = 0;
  slices_per_gpu = 7;
  gpu_sources.clear();
}

bool Decision::has(Action action) const {
  return std::any_of(findings.begin(), findings.end(), [&](const Finding& f) { return f.action == action; });
}

void keep_new_findings(Decision& decision, const Decision& before) {
  auto seen_before = [&](const Finding& f) {
    return std::any_of(before.findings.begin(), before.findings.end(),
                       [&](const Finding& b) { return b.rule == f.rule && b.field == f.field; });
  };
  decision.findings.erase(std::remove_if(decision.findings.begin(), decision.findings.end(), seen_before),
                          decision.findings.end());
  decision.allowed = !decision.has(Action::Deny);
}

}  // namespace gpu_admission::policy
