// tenant-labels: every pod of a tenant carries gpu-admission.io/tenant and the tenant's labels.
// An existing different value is never overwritten: the tenant-label rule reports it.
#include "policy/evaluation/mutations/mutation.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {

bool mutate_tenant_labels(MutationContext& ctx) {
  if (!ctx.tenant) return false;
  bool changed = false;
  auto ensure = [&](std::string_view key, std::string_view value) {
    bool found = false;
    ctx.pod.label(key, &found);
    if (found) return;
    ctx.patcher.add_label(key, value);
    changed = true;
  };
  ensure(kTenantLabelKey, ctx.tenant->name);
  for (const auto& [key, value] : ctx.tenant->labels) ensure(key, value);
  return changed;
}

}  // namespace gpu_admission::policy
