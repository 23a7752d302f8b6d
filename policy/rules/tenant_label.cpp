// tenant-label: a pod must not claim another tenant through gpu-admission.io/tenant, nor set one
// of its tenant's label keys to another value (labels drive cost attribution and quotas).
#include "policy/rules/rule.h"
#include "policy/tenant_labels.h"

namespace gpu_admission::policy {

void check_tenant_label(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.tenant) return;
  auto check = [&](std::string_view key, std::string_view expected) {
    bool found = false;
    std::string_view value = ctx.pod.label(key, &found);
    if (!found || value == expected) return;
    out.report(ctx.field("metadata.labels[\"" + std::string(key) + "\"]"),
               "label " + std::string(key) + "=" + quoted(value) + " differs from tenant " +
                   quoted(ctx.tenant->name) + "'s value " + quoted(expected));
  };
  check(kTenantLabelKey, ctx.tenant->name);
  for (const auto& [key, value] : ctx.tenant->labels) check(key, value);
}

}  // namespace gpu_admission::policy
