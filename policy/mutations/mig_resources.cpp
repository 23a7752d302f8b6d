// mig-resources: in a pool with mig.strategy mixed, whole-GPU requests become MIG slices of the
// profile named by the gpu-admission.io/mig-profile annotation, else the pool's default. With
// strategy single, the pod is pinned to nodes of that profile by nvidia.com/gpu.product.
// What was done is recorded in the gpu-admission.io/mig-injected annotation.
#include "policy/mutations/mutation.h"
#include "policy/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

const MigProfileEntry* chosen_profile(const MutationContext& ctx) {
  bool annotated = false;
  std::string_view requested = ctx.pod.annotation(kMigProfileAnnotation, &annotated);
  if (annotated) return ctx.pool->find_profile(requested);  // invalid: left to the mig-profile rule
  if (ctx.pool->default_profile < 0) return nullptr;
  return &ctx.pool->mig_profiles[ctx.pool->default_profile];
}

}  // namespace

bool mutate_mig_resources(MutationContext& ctx) {
  if (!ctx.pool || !ctx.gpu_pod) return false;
  const Pool& pool = *ctx.pool;
  if (pool.mig_strategy == MigStrategy::None) return false;
  const MigProfileEntry* profile = chosen_profile(ctx);
  if (!profile) return false;

  std::string record;
  if (pool.mig_strategy == MigStrategy::Single) {
    bool found = false;
    ctx.pod.node_selector_value(kGpuProductLabel, &found);
    if (found) return false;  // already pinned (by us or by the user; a wrong value fails scheduling)
    ctx.patcher.add_node_selector(kGpuProductLabel, profile->single_product);
    record = "{\"strategy\":\"single\",\"profile\":\"" + profile->name + "\"}";
  } else {
    std::string containers;
    for (auto& c : ctx.pod.containers) {
      if (c.kind == ContainerKind::Ephemeral) continue;
      bool changed = false;
      for (int pass = 0; pass < 2; ++pass) {
        const bool limits = pass == 1;
        auto& list = limits ? c.limits : c.requests;
        if (find_resource(list, profile->resource)) continue;  // mixing would be ambiguous: leave as is
        for (auto& q : list) {
          if (ctx.policy.classify_resource(q.name) != CompiledPolicy::GpuKind::Full) continue;
          ctx.patcher.rename_resource(c, limits, q, profile->resource);
          changed = true;
          break;  // one full-GPU resource per list becomes the MIG slice
        }
      }
      if (changed) {
        if (!containers.empty()) containers += ',';
        containers += '"';
        containers += c.name;
        containers += '"';
      }
    }
    if (containers.empty()) return false;
    record = "{\"strategy\":\"mixed\",\"profile\":\"" + profile->name + "\",\"containers\":[" + containers + "]}";
  }
  ctx.patcher.set_annotation(kMigInjectedAnnotation, record);
  return true;
}

}  // namespace gpu_admission::policy
