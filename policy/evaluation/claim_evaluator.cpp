// A ResourceClaim or ResourceClaimTemplate judged on its own admission, with its
// namespace's tenant: gpu-cap when it alone asks for more GPUs than the cap or for every device
// of a class (allocationMode: All), gpu-device-access for adminAccess. Its pool is not known
// until a pod uses it, so a pinned MIG profile counts its largest share on any model (slices of
// kAnyModelSlicesPerGpu); the pod that uses the claim is judged again with its pool.
#include <array>
#include <cstddef>
#include <memory_resource>

#include "policy/base/quoted_value.h"
#include "policy/dra/claim_gpus.h"
#include "policy/evaluation/evaluator.h"
#include "policy/dra/gpu_request.h"
#include "policy/dra/pod_claims.h"
#include "policy/evaluation/device_tolerations.h"
#include "policy/evaluation/exceptions.h"

namespace gpu_admission::policy {
namespace {

std::string request_field(const ClaimView& claim, const RequestGpus& r) {
  return std::string(claim.devices_field()) + ".requests[" + std::to_string(r.index) + "]";
}

void add(Decision& out, RuleId rule, Action action, std::string field, std::string message) {
  out.findings.push_back({rule, action, std::move(field), std::move(message)});
}

void check_claim_cap(const CompiledPolicy& policy, const ClaimView& claim, const ClaimGpus& gpus, const Tenant* tenant,
                     int per_gpu, Decision& out) {
  const Action action = policy.action(RuleId::GpuCap, tenant);
  auto cap = policy.max_gpus_for(tenant);
  if (action == Action::Off || !cap) return;
  for (const auto& r : gpus.requests) {
    if (!r.all) continue;
    add(out, RuleId::GpuCap, action, request_field(claim, r),
        "request " + quoted(r.name) + " asks for every GPU of its device class (allocationMode: All) where a cap applies");
  }
  if (gpus.slices <= *cap * per_gpu || gpus.all) return;  // All is reported above
  std::string who = tenant && tenant->max_gpus_per_pod ? "tenant " + quoted(tenant->name) + " allows" : "the default cap is";
  std::string asked = gpus.slices >= kSaturatedSlices ? "more GPUs than can be counted" : gpus_text(gpus.slices, per_gpu) + " GPUs";
  add(out, RuleId::GpuCap, action, std::string(claim.devices_field()) + ".requests",
      std::string(claim.kind == ClaimKind::Template ? "claim template" : "claim") + " asks for " + asked + "; " + who +
          " " + std::to_string(*cap) + " per pod");
}

void check_claim_admin_access(const CompiledPolicy& policy, const ClaimView& claim, const ClaimGpus& gpus,
                              const Tenant* tenant, Decision& out) {
  const Action action = policy.action(RuleId::GpuDeviceAccess, tenant);
  if (action == Action::Off) return;
  for (const auto& r : gpus.requests) {
    if (!r.gpu || !r.admin_access) continue;
    add(out, RuleId::GpuDeviceAccess, action, request_field(claim, r),
        "request " + quoted(r.name) + " asks for adminAccess, which reaches GPUs allocated to other pods");
  }
}

}  // namespace

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
  check_claim_admin_access(policy, claim, gpus, tenant, out);
  check_claim_device_tolerations(policy, claim, policy.action(RuleId::GpuDeviceAccess, tenant), out);
  check_claim_cap(policy, claim, gpus, tenant, counting.slices_per_gpu, out);
  out.allowed = !out.has(Action::Deny);
  apply_exceptions(policy, {ns, tenant, options.username, nullptr, options.now}, out);
}

}  // namespace gpu_admission::policy
