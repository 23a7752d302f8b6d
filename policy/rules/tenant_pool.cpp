// tenant-pool: a tenant's pod may only target the tenant's pools, no pod may select more than
// one pool, and a pod evaluated in its tenant's default pool must not keep a node selector that
// contradicts that pool (it would run somewhere it was not evaluated for).
#include "policy/rules/rule.h"

namespace gpu_admission::policy {
namespace {

// Where the pod names `pool`: its nodeSelector when that holds every pool label, else its affinity.
std::string naming_field(const RuleContext& ctx, const Pool& pool) {
  for (const auto& [key, value] : pool.node_selector) {
    bool found = false;
    if (ctx.pod.node_selector_value(key, &found) != value || !found)
      return ctx.field("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution");
  }
  return ctx.field("spec.nodeSelector");
}

}  // namespace

void check_tenant_pool(const RuleContext& ctx, RuleOutput& out) {
  if (ctx.named_pools.size() > 1) {
    std::string names;
    for (const Pool* p : ctx.named_pools) names += (names.empty() ? "" : ", ") + quoted(p->name);
    out.report(naming_field(ctx, *ctx.named_pools.back()), "selects more than one pool (" + names + ")");
  }
  if (ctx.tenant) {
    for (const Pool* p : ctx.named_pools) {
      if (ctx.tenant->allowed_pools[p->index]) continue;
      out.report(naming_field(ctx, *p), "tenant " + quoted(ctx.tenant->name) + " may not use pool " + quoted(p->name));
    }
  }
  if (!ctx.pool) return;
  for (const auto& [key, value] : ctx.pool->node_selector) {
    bool found = false;
    std::string_view actual = ctx.pod.node_selector_value(key, &found);
    if (!found || actual == value) continue;
    out.report(ctx.field("spec.nodeSelector[\"" + key + "\"]"),
               "nodeSelector " + key + "=" + quoted(actual) + " names no pool; the pod is evaluated in pool " +
                   quoted(ctx.pool->name) + ", which needs " + key + "=" + quoted(value));
  }
}

}  // namespace gpu_admission::policy
