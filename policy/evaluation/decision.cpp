#include "policy/evaluation/decision.h"

#include <algorithm>

#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {

void Decision::clear() {
  allowed = true;
  exempt = false;
  exempt_by = {};
  tenant = nullptr;
  mode = Enforcement::Enforce;
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

std::vector<std::string> withheld_changes(const Decision& d) {
  std::vector<std::string> out;
  auto did = [&](MutationId m) { return d.mutated[static_cast<size_t>(m)]; };
  constexpr std::string_view kConverted = "converted ";
  bool converted = false;
  for (const std::string& notice : d.notices) {
    if (!notice.starts_with(kConverted)) continue;
    out.push_back("would convert " + notice.substr(kConverted.size()));
    converted = true;
  }
  const std::string pool = d.pool ? " in pool " + d.pool->name : "";
  if (did(MutationId::MigResources) && !converted) out.push_back("would select the pod's MIG profile" + pool);
  if (did(MutationId::TenantLabels) && d.tenant) {
    std::string labels = std::string(kTenantLabelKey) + "=" + d.tenant->name;
    for (const auto& [key, value] : d.tenant->labels) labels += ", " + key + "=" + value;
    out.push_back("would label the pod " + labels);
  }
  if (did(MutationId::PoolSelector) && d.pool) out.push_back("would pin to pool " + d.pool->name);
  if (did(MutationId::HideGpus)) out.push_back("would set NVIDIA_VISIBLE_DEVICES=void in containers that ask for no GPU");
  return out;
}

void merge_template_decision(Decision& whole, const Decision& one, bool first) {
  if (first) {
    whole.tenant = one.tenant;
    whole.mode = one.mode;
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
