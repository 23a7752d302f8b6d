// gpu-device-access, one of its checks: the tolerations of DRA GPU requests, of a pod's claims
// and of a claim on its own (device taints fence broken GPUs or reserve GPUs for someone else; a
// tenant tolerates only what spec.deviceTolerations allows).
#include "policy/evaluation/rules/gpu_device_access.h"

#include <vector>

#include "policy/evaluation/device_tolerations.h"

namespace gpu_admission::policy {

void check_device_tolerations(const RuleContext& ctx, RuleOutput& out) {
  std::vector<DisallowedToleration> found;
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved() || !e.gpus.gpu) continue;  // unresolved: judged when the claim is created and allocated
    found.clear();
    find_disallowed_tolerations(ctx.policy, *e.claim, found);
    for (const auto& d : found)
      out.report(claim_field(ctx, e), e.describe() + " " + disallowed_toleration_message(*e.claim, d));
  }
}

void check_claim_device_tolerations(const ClaimContext& ctx, RuleOutput& out) {
  std::vector<DisallowedToleration> found;
  find_disallowed_tolerations(ctx.policy, ctx.claim, found);
  for (const auto& d : found)
    out.report(std::string(ctx.claim.devices_field()) + "." + d.field, disallowed_toleration_message(ctx.claim, d));
}

}  // namespace gpu_admission::policy
