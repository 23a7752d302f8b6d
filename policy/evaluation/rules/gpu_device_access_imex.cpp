// gpu-device-access, one of its checks: DRA requests that reach every IMEX channel of a compute
// domain (Multi-Node NVLink). A process holding an IMEX channel can import the GPU memory that
// other processes export on it across the NVLink domain; a ComputeDomain hands each workload one
// channel. A request for all of them (allocationMode All or a count above 1 on an IMEX class, a
// compute-domain.nvidia.com config with allocationMode All) or for a domain's IMEX daemon reaches
// what other workloads share there: refused in adversarial pools unless the policy lists the
// device class in spec.deviceClasses.imexAllowed.
#include "policy/evaluation/rules/gpu_device_access.h"

namespace gpu_admission::policy {

void check_imex_channels(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.pool || ctx.pool->trust != Trust::Adversarial) return;
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved() || e.repeat || !e.gpus.imex_every_channel) continue;
    for (const RequestGpus& r : e.gpus.requests) {
      for (std::string_view device_class : r.imex_every_channel) {
        if (ctx.policy.imex_device_class_allowed(device_class)) continue;
        out.report(claim_field(ctx, e),
                   e.describe() + " request " + quoted(r.name) + " (device class " + quoted(device_class) +
                       ") reaches every IMEX channel of a compute domain (allocationMode All, a count of channels, "
                       "or a compute-domain config for all channels or the IMEX daemon) in adversarial pool " +
                       quoted(ctx.pool->name) + "; list the class in spec.deviceClasses.imexAllowed to allow it");
      }
    }
  }
}

}  // namespace gpu_admission::policy
