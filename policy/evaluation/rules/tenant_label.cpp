// tenant-label: a pod must not claim another tenant through gpu-admission.io/tenant (in a
// namespace of no tenant, any value of it is such a claim), nor set one of its tenant's label
// keys to another value (labels drive cost attribution and quotas). While the tenant-labels
// mutation is on, a pod that lacks them was not mutated (/validate judges it as it arrives); on
// UPDATE, removing one of them is refused whatever the mutation's setting.
#include "policy/evaluation/rules/rule.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// A pod of no tenant wearing the tenant label would pass for that tenant's pod wherever the
// label is trusted (cost attribution, quotas, network policies that select on it).
void check_unmapped(const RuleContext& ctx, RuleOutput& out) {
  bool found = false;
  std::string_view value = ctx.pod.label(kTenantLabelKey, &found);
  if (!found) return;
  out.report(ctx.field("metadata.labels" + quoted_key(kTenantLabelKey)),
             "label " + std::string(kTenantLabelKey) + "=" + quoted(value) + " claims a tenant, but namespace " +
                 quoted(ctx.namespace_name) + " belongs to no tenant");
}

void check_tenant_label(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.tenant) return check_unmapped(ctx, out);
  const bool injected = ctx.policy.mutation_enabled(MutationId::TenantLabels);
  auto check = [&](std::string_view key, std::string_view expected) {
    // The field path is built only for a finding: the common pod has none.
    auto field = [&] { return ctx.field("metadata.labels" + quoted_key(key)); };
    bool found = false;
    std::string_view value = ctx.pod.label(key, &found);
    if (found) {
      if (value != expected)
        out.report(field(), "label " + std::string(key) + "=" + quoted(value) + " differs from tenant " +
                              quoted(ctx.tenant->name) + "'s value " + quoted(expected));
      return;
    }
    bool had = false;
    if (ctx.old_pod) ctx.old_pod->label(key, &had);
    if (had) {
      out.report(field(), "removes label " + std::string(key) + " of tenant " + quoted(ctx.tenant->name));
    } else if (injected) {
      out.report(field(), "lacks label " + std::string(key) + "=" + quoted(expected) + " of tenant " +
                            quoted(ctx.tenant->name) + "; /mutate would have added it");
    }
  };
  check(kTenantLabelKey, ctx.tenant->name);
  for (const auto& [key, value] : ctx.tenant->labels) check(key, value);
}

}  // namespace

constinit const RuleEntry kTenantLabelRule = rule_entry({
    .pod = check_tenant_label,
    .refuses = "a pod of no tenant (an unmapped namespace) with a `gpu-admission.io/tenant` label, whatever its "
               "value; a tenant's pod whose `gpu-admission.io/tenant` label names another tenant, or that sets one "
               "of its tenant's `labels` to another value; on UPDATE, removing one of those labels; on `/validate`, "
               "while `tenant-labels` is on, a tenant's pod that lacks them",
});

}  // namespace gpu_admission::policy
