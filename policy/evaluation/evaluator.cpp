#include "policy/evaluation/evaluator.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory_resource>

#include "policy/dra/gpu_request.h"
#include "policy/evaluation/exceptions.h"
#include "policy/evaluation/mutations/mutation.h"
#include "policy/evaluation/pool_resolution.h"
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {
namespace {

void run_mutations(const CompiledPolicy& policy, MutationContext& ctx, Decision& out) {
  using Fn = bool (*)(MutationContext&);
  constexpr std::array<Fn, kMutationCount> kMutations = {mutate_mig_resources, mutate_tenant_labels,
                                                         mutate_pool_selector, mutate_hide_gpus};
  for (size_t i = 0; i < kMutationCount; ++i) {
    if (policy.mutation_enabled(static_cast<MutationId>(i))) out.mutated[i] = kMutations[i](ctx);
  }
}

// The pool a pod's mutations are made for. A GPU pod that is not pinned is mutated in its
// tenant's default pool, where pool-selector pins it; when pool-selector is off nothing pins it
// there, and it has no pool.
const Pool* mutation_pool(const CompiledPolicy& policy, const PodView& pod, const Tenant* tenant,
                          const PoolResolution& pools, bool gpu_pod) {
  const Pool* pool = pools.pool;
  // Several pools named, among them the default one pool-selector adds: its mutations were
  // made for the default pool, so a second pass over the mutated pod changes nothing.
  if (pools.named.size() > 1 && tenant && tenant->default_pool >= 0 &&
      std::find(pools.named.begin(), pools.named.end(), &policy.pools()[tenant->default_pool]) != pools.named.end() &&
      selector_holds(pod, policy.pools()[tenant->default_pool]))
    pool = &policy.pools()[tenant->default_pool];
  if (!pools.pinned && gpu_pod && tenant && tenant->default_pool >= 0) {
    const Pool& fallback = policy.pools()[tenant->default_pool];
    const bool escapes = pools.named.size() == 1;  // judged in the default pool, pinned or not
    if (escapes || (policy.mutation_enabled(MutationId::PoolSelector) && !selector_contradicts(pod, fallback)))
      pool = &fallback;
  }
  return pool;
}

// The pool a pod is judged in: the one the pod (as judged) is pinned to; a pin a mutation added
// counts, one that was not added does not. A GPU pod that names a pool but can escape it (an
// ORed term that names none) is judged in its tenant's default pool; one that names none has no
// pool.
const Pool* judged_pool(const CompiledPolicy& policy, const Tenant* tenant, const PoolResolution& pools,
                        bool gpu_pod) {
  if (!pools.pinned && pools.named.size() == 1 && gpu_pod && tenant && tenant->default_pool >= 0)
    return &policy.pools()[tenant->default_pool];
  return pools.pool;
}

}  // namespace

bool exempt(const CompiledPolicy& policy, std::string_view ns, const EvalOptions& options, Decision& out) {
  if (policy.namespace_exempt(ns)) out.exempt_by = "namespace";
  else if (!options.username.empty() && policy.username_exempt(options.username)) out.exempt_by = "username";
  else return false;
  out.exempt = true;
  return true;
}

const Tenant* tenant_of(const CompiledPolicy& policy, std::string_view ns, const EvalOptions& options, Decision& out) {
  bool tenant_unknown = false;
  const Tenant* tenant = policy.tenant_for_namespace(ns, options.namespace_labels, &tenant_unknown);
  out.tenant = tenant;
  out.tenant_unknown = tenant_unknown;
  out.mode = policy.mode_for(tenant);
  return tenant;
}

void evaluate(const CompiledPolicy& policy, PodView& pod, const EvalOptions& options, Decision& out) {
  out.clear();
  std::string_view ns = options.namespace_name.empty() ? pod.namespace_name : options.namespace_name;
  if (exempt(policy, ns, options, out)) return;

  const Tenant* tenant = tenant_of(policy, ns, options, out);
  const bool tenant_unknown = out.tenant_unknown;
  // Observing: /mutate withheld its changes on purpose, so the pod is judged as it would have left it.
  const bool mutate = options.mutate || policy.mutations_withheld(tenant);
  PoolResolution pools = resolve_pools(policy, pod);
  // The lists of this evaluation's claim lookups and counts live in an arena on the stack, so a
  // review with DRA claims touches the heap only when they outgrow it.
  std::array<std::byte, 4096> arena_bytes;
  std::pmr::monotonic_buffer_resource arena(arena_bytes.data(), arena_bytes.size());
  const MemoizedClaims memo(options.claims, &arena);  // each claim looked up once per evaluation
  const ClaimResolver* claims = memo.get();
  // The pod's PodGroup, looked up once: its claims are the pod's too.
  const PodGroupView* group =
      !pod.pod_group.empty() && options.groups ? options.groups->find_group(ns, pod.pod_group) : nullptr;
  // Whether it is a GPU pod, and which containers use GPU claims, does not depend on the pool;
  // /validate needs it only for a pod its tenant's default pool may apply to.
  const bool default_pool_may_apply = !pools.pinned && tenant && tenant->default_pool >= 0;
  GpuRequest gpu(&arena);
  if (mutate || default_pool_may_apply)
    gpu = compute_gpu_request(policy, pod, nullptr, nullptr, claims, ns, &arena, group);
  const bool gpu_pod = gpu.gpu_pod();

  std::vector<QuantityProblem> problems;
  if (mutate) {
    const Pool* pool = mutation_pool(policy, pod, tenant, pools, gpu_pod);
    PodPatcher patcher(pod, out.patch);
    MutationContext ctx{policy, pod, tenant, pool, gpu_pod, pools.pinned, gpu.claims, patcher, out.notices, &arena};
    run_mutations(policy, ctx, out);
    if (!out.patch.empty()) pools = resolve_pools(policy, pod);  // judged as it now is
  }
  const Pool* pool = judged_pool(policy, tenant, pools, gpu_pod);
  out.pool = pool;
  gpu = compute_gpu_request(policy, pod, pool, &problems, claims, ns, &arena, group);
  out.gpu_slices = gpu.slices;
  out.slices_per_gpu = gpu.slices_per_gpu;
  // Sources are shown where the count is not plain from the resources: claims, DRA extended resources.
  if (options.describe_gpus && (!gpu.claims.entries.empty() || gpu.device_class_resources))
    out.gpu_sources = gpu_sources_text(gpu);

  RuleContext ctx{policy, pod, ns, tenant, pool, pools.pinned, options.old_pod, pools.named, gpu, problems,
                  tenant_unknown};
  run_rule_checks(policy, tenant, &RuleEntry::pod, ctx, out.findings);
  out.allowed = !out.has(Action::Deny);
  apply_exceptions(policy, {ns, tenant, options.username, &pod.labels, options.now}, out);
  if (policy.mutations_withheld(tenant) && !out.patch.empty()) {
    out.withheld_patch = std::move(out.patch);
    out.patch.clear();
  }
}

}  // namespace gpu_admission::policy
