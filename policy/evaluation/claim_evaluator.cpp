// A ResourceClaim or ResourceClaimTemplate judged on its own admission, with its namespace's
// tenant, by every rule whose entry has a claim check (rules/registry.cpp). Its pool is not known
// until a pod uses it, so a pinned MIG profile counts its largest share on any model (slices of
// kAnyModelSlicesPerGpu); the pod that uses the claim is judged again with its pool.
#include <array>
#include <cstddef>
#include <memory_resource>

#include "policy/dra/claim_gpus.h"
#include "policy/evaluation/evaluator.h"
#include "policy/dra/gpu_request.h"
#include "policy/evaluation/exceptions.h"
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {

void evaluate_claim(const CompiledPolicy& policy, const ClaimView& claim, const EvalOptions& options, Decision& out) {
  out.clear();
  std::string_view ns = options.namespace_name.empty() ? claim.namespace_name : options.namespace_name;
  if (exempt(policy, ns, options, out)) return;
  const Tenant* tenant = policy.tenant_for_namespace(ns, options.namespace_labels);
  out.tenant = tenant;
  out.mode = policy.mode_for(tenant);
  std::array<std::byte, 2048> arena_bytes;  // the count's lists: no heap for a common claim
  std::pmr::monotonic_buffer_resource arena(arena_bytes.data(), arena_bytes.size());
  const GpuCounting counting = gpu_counting(policy, nullptr);
  const ClaimGpus gpus = count_claim_gpus(claim, counting, &arena);
  out.gpu_slices = gpus.slices;
  out.slices_per_gpu = counting.slices_per_gpu;
  const ClaimContext ctx{policy, claim, gpus, tenant, counting.slices_per_gpu};
  run_rule_checks(policy, tenant, &RuleEntry::claim, ctx, out.findings);
  out.allowed = !out.has(Action::Deny);
  apply_exceptions(policy, {ns, tenant, options.username, nullptr, options.now}, out);
}

}  // namespace gpu_admission::policy
