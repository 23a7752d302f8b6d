// tenant-pool: a tenant's pod may only target the tenant's pools; no pod may select more than
// one pool; a GPU pod must be pinned to a pool when its tenant has pools (on /validate an
// unmutated pod is not, and could run on any node); a GPU pod in a namespace of no tenant is
// refused unless defaults.unmappedGpuPods is allow; a GPU pod whose tenant cannot be told (its
// namespace's labels could not be read) is refused whatever that says.
#include <algorithm>

#include "policy/evaluation/pool_resolution.h"
#include "policy/evaluation/rules/rule.h"

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

std::string pool_list(const CompiledPolicy& policy, const Tenant& tenant) {
  std::string out;
  for (const auto& p : policy.pools())
    if (tenant.allowed_pools[p.index]) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

// Why pool-selector cannot pin the pod to its default pool: a key of the pool the pod sets to
// another value (pool-selector never overwrites it). "" when there is none.
std::string selector_clash(const RuleContext& ctx, const Pool& pool) {
  const std::string* key = selector_contradicts(ctx.pod, pool);
  if (!key) return "";
  return "its nodeSelector " + *key + "=" + quoted(ctx.pod.node_selector_value(*key)) +
         " names no pool, and pool-selector never overwrites it";
}

void check_pinned(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.gpu.gpu_pod()) return;
  if (!ctx.tenant && ctx.tenant_unknown) {
    // Whatever unmappedGpuPods says: the namespace may well belong to a tenant with a cap.
    out.report("metadata.namespace", "GPU pod in namespace " + quoted(ctx.namespace_name) +
                                         ", whose tenant cannot be told: its labels could not be read from the "
                                         "API server (see the webhook's log); try again");
    return;
  }
  if (!ctx.tenant) {
    if (ctx.policy.config().unmapped_gpu_pods == UnmappedGpuPods::Allow) return;
    // The namespace is the object's own (a template has none of its own).
    out.report("metadata.namespace", "GPU pod in namespace " + quoted(ctx.namespace_name) +
                                                    ", which belongs to no tenant (defaults.unmappedGpuPods: deny)");
    return;
  }
  const auto& allowed = ctx.tenant->allowed_pools;
  if (ctx.pinned || std::none_of(allowed.begin(), allowed.end(), [](bool b) { return b; })) return;
  std::string message = "GPU pod is not pinned to a pool of tenant " + quoted(ctx.tenant->name) + " (" +
                        pool_list(ctx.policy, *ctx.tenant) + ") and could run on any node; ";
  if (ctx.tenant->default_pool < 0)
    message += "the tenant has no defaultPool, so name one of its pools in spec.nodeSelector";
  else if (!ctx.policy.mutation_enabled(MutationId::PoolSelector))
    message += "pool-selector is off, so name one of its pools in spec.nodeSelector";
  else if (auto clash = selector_clash(ctx, ctx.policy.pools()[ctx.tenant->default_pool]); !clash.empty())
    message += clash;
  else
    message += "/mutate would have pinned it to pool " + quoted(ctx.policy.pools()[ctx.tenant->default_pool].name);
  out.report(ctx.field("spec.nodeSelector"), std::move(message));
}

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
  check_pinned(ctx, out);
}

}  // namespace

constinit const RuleEntry kTenantPoolRule = rule_entry({
    .pod = check_tenant_pool,
    .refuses = "a tenant's pod that targets a pool not in the tenant's `pools`; any pod that selects more than one "
               "pool; a GPU pod that is not pinned to a pool while its tenant has pools (on `/validate`, a pod "
               "`/mutate` did not fix); a GPU pod of no tenant, unless `spec.defaults.unmappedGpuPods` is `allow`; a "
               "GPU pod whose tenant cannot be told (its namespace's labels could not be read), whatever that says",
});

}  // namespace gpu_admission::policy
