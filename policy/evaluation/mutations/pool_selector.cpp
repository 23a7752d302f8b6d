// pool-selector: a GPU pod of a tenant that names no pool is pinned to its tenant's default
// pool, so it lands where its policy was evaluated. Pods without GPUs are never pinned.
#include "policy/evaluation/mutations/mutation.h"

namespace gpu_admission::policy {

bool mutate_pool_selector(MutationContext& ctx) {
  if (!ctx.tenant || !ctx.gpu_pod || ctx.pool_named || !ctx.pool) return false;
  if (ctx.tenant->default_pool != ctx.pool->index) return false;
  bool changed = false;
  for (const auto& [key, value] : ctx.pool->node_selector) {
    bool found = false;
    ctx.pod.node_selector_value(key, &found);
    if (found) continue;  // never overwrite a user's selector
    ctx.patcher.add_node_selector(key, value);
    changed = true;
  }
  return changed;
}

}  // namespace gpu_admission::policy
