// gpu-cap: the pod's effective GPU request (exact, in compute slices) above its tenant's
// maxGpusPerPod, else defaults.maxGpusPerPod; and GPU quantities that are not whole numbers.
#include "policy/mutations/mutation.h"
#include "policy/quantity.h"
#include "policy/rules/rule.h"

namespace gpu_admission::policy {

void check_gpu_cap(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& p : ctx.quantity_problems) {
    std::string shown = quantity_json(*p.quantity);
    out.report(resource_field(ctx, *p.container, p.in_limits, p.quantity->name),
               container_label(*p.container) + " requests " + std::string(p.quantity->name) + " " + shown + ", which is " +
                   describe(p.status) + " (GPU quantities must be whole numbers)");
  }
  auto cap = ctx.policy.max_gpus_for(ctx.tenant);
  if (!cap) return;
  const int per_gpu = ctx.gpu.slices_per_gpu;
  if (ctx.gpu.slices <= *cap * per_gpu) return;
  std::string who = ctx.tenant && ctx.tenant->max_gpus_per_pod ? "tenant " + quoted(ctx.tenant->name) + " allows"
                                                                : "the default cap is";
  out.report(ctx.field("spec"), "pod requests " + gpus_text(ctx.gpu.slices, per_gpu) + " GPUs; " + who + " " +
                                    std::to_string(*cap) + " per pod");
}

}  // namespace gpu_admission::policy
