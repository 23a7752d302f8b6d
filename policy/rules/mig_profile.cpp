// mig-profile: MIG resources must be valid profiles of the pool's GPU model and only appear in
// pools using the mixed strategy; the mig-profile annotation must name a valid profile; a
// container may use one MIG type. A pod with no pool is checked only for the last.
#include "policy/mig.h"
#include "policy/rules/rule.h"
#include "policy/tenant_labels.h"

namespace gpu_admission::policy {

void check_mig_profile(const RuleContext& ctx, RuleOutput& out) {
  const std::string_view prefix = ctx.policy.mig_prefix();
  const Pool* pool = ctx.pool;
  for (const auto& c : ctx.pod.containers) {
    std::string_view first_type;
    for (int pass = 0; pass < 2; ++pass) {
      const bool limits = pass == 1;
      for (const auto& q : limits ? c.limits : c.requests) {
        if (ctx.policy.classify_resource(q.name) != CompiledPolicy::GpuKind::Mig) continue;
        if (limits && find_resource(c.requests, q.name)) continue;  // already checked in requests
        if (first_type.empty()) {
          first_type = q.name;
        } else if (q.name != first_type) {
          out.report(resource_field(ctx, c, limits, q.name), container_label(c) + " uses two MIG types (" +
                                                                 std::string(first_type) + " and " +
                                                                 std::string(q.name) + ")");
        }
        if (!pool) continue;
        if (pool->mig_strategy != MigStrategy::Mixed) {
          out.report(resource_field(ctx, c, limits, q.name),
                     container_label(c) + " requests " + std::string(q.name) + " in pool " + quoted(pool->name) +
                         " whose MIG strategy is " +
                         std::string(kMigStrategyNames[static_cast<size_t>(pool->mig_strategy)]) +
                         (pool->mig_strategy == MigStrategy::Single ? " (MIG devices appear as nvidia.com/gpu there)"
                                                                    : ""));
        } else if (!pool->find_profile_by_resource(q.name)) {
          std::string profile = mig_profile_from_resource_suffix(q.name.substr(prefix.size()));
          out.report(resource_field(ctx, c, limits, q.name),
                     container_label(c) + " requests MIG profile " + quoted(profile) + ", not a profile of " +
                         quoted(pool->gpu_model) + " in pool " + quoted(pool->name));
        }
      }
    }
  }
  bool found = false;
  std::string_view requested = ctx.pod.annotation(kMigProfileAnnotation, &found);
  if (found && pool && !pool->find_profile(requested)) {
    out.report(ctx.field("metadata.annotations[\"gpu-admission.io/mig-profile\"]"),
               "annotation names MIG profile " + quoted(requested) + ", not a profile of " +
                   quoted(pool->gpu_model.empty() ? std::string("(no gpuModel)") : pool->gpu_model) + " in pool " +
                   quoted(pool->name));
  }
}

}  // namespace gpu_admission::policy
