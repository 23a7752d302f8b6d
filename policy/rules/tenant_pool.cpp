// tenant-pool: a tenant's pod may only target the tenant's pools, and no pod may select more
// than one pool.
#include "policy/rules/rule.h"

namespace gpu_admission::policy {

void check_tenant_pool(const RuleContext& ctx, RuleOutput& out) {
  if (ctx.named_pools.size() > 1) {
    std::string names;
    for (const Pool* p : ctx.named_pools) names += (names.empty() ? "" : ", ") + quoted(p->name);
    out.report(ctx.field("spec.nodeSelector"), "selects more than one pool (" + names + ")");
  }
  if (!ctx.tenant) return;
  for (const Pool* p : ctx.named_pools) {
    if (ctx.tenant->allowed_pools[p->index]) continue;
    out.report(ctx.field("spec.nodeSelector"),
               "tenant " + quoted(ctx.tenant->name) + " may not use pool " + quoted(p->name));
  }
}

}  // namespace gpu_admission::policy
