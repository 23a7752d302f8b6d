// A PodGroup judged on its own admission (scheduling.k8s.io, Kubernetes 1.36+), with its
// namespace's tenant, by every rule whose entry has a group check (rules/registry.cpp). Its
// spec.resourceClaims are devices every pod of the group shares, so they are judged as a pod of
// the group that asks for nothing else would be judged: a member with no containers whose own
// entries are the group's (so findings name spec.resourceClaims[i]), counted and judged in the
// pool such a pod lands in, its tenant's default pool (pool-selector pins it there); with no
// default pool, in none (the pool rules then wait for the pods). Each pod is judged again with the
// group's claims when it is created, in its own pool, and when the claims are allocated.
#include <array>
#include <cstddef>
#include <memory_resource>
#include <vector>

#include "policy/dra/gpu_request.h"
#include "policy/evaluation/evaluator.h"
#include "policy/evaluation/exceptions.h"
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {

void evaluate_pod_group(const CompiledPolicy& policy, const PodGroupView& group, const EvalOptions& options,
                        Decision& out) {
  out.clear();
  std::string_view ns = options.namespace_name.empty() ? group.namespace_name : options.namespace_name;
  if (exempt(policy, ns, options, out)) return;
  const Tenant* tenant = tenant_of(policy, ns, options, out);
  const bool tenant_unknown = out.tenant_unknown;
  const Pool* pool = tenant && tenant->default_pool >= 0 ? &policy.pools()[tenant->default_pool] : nullptr;
  out.pool = pool;

  PodView member;
  member.name = group.name;
  member.namespace_name = group.namespace_name;
  member.has_spec = true;
  member.resource_claims = group.resource_claims;
  std::array<std::byte, 2048> arena_bytes;  // the counts' lists: no heap for a common group
  std::pmr::monotonic_buffer_resource arena(arena_bytes.data(), arena_bytes.size());
  const MemoizedClaims memo(options.claims, &arena);
  const GpuRequest gpu = compute_gpu_request(policy, member, pool, nullptr, memo.get(), ns, &arena);
  out.gpu_slices = gpu.slices;
  out.slices_per_gpu = gpu.slices_per_gpu;
  if (options.describe_gpus && !gpu.claims.entries.empty()) out.gpu_sources = gpu_sources_text(gpu);

  const std::vector<QuantityProblem> no_problems;
  const NamedPools no_named_pools;
  const RuleContext ctx{policy, member, ns, tenant, pool, true, nullptr, no_named_pools, gpu, no_problems,
                        tenant_unknown};
  run_rule_checks(policy, tenant, &RuleEntry::group, ctx, out.findings);
  out.allowed = !out.has(Action::Deny);
  apply_exceptions(policy, {ns, tenant, options.username, nullptr, options.now}, out);
}

}  // namespace gpu_admission::policy
