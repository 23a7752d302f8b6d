// gpu-tolerations: a GPU pod must tolerate every taint of defaults.gpuTaints plus its pool's
// taints, with Kubernetes toleration matching.
#include "policy/evaluation/rules/rule.h"
#include "policy/evaluation/tolerations.h"

namespace gpu_admission::policy {
namespace {

std::string taint_text(const Taint& t) {
  std::string out = t.key;
  if (!t.value.empty()) out += "=" + t.value;
  out += ":" + t.effect;
  return out;
}

// `pool`: the taint is the pool's; nullptr: one of defaults.gpuTaints.
void require(const RuleContext& ctx, RuleOutput& out, const Taint& taint, const Pool* pool) {
  if (tolerates_taint(ctx.pod.tolerations, taint)) return;
  const std::string source = pool ? "pool " + quoted(pool->name) : "GPU node";
  out.report(ctx.field("spec.tolerations"), "GPU pod does not tolerate " + source + " taint " + taint_text(taint));
}

void check_gpu_tolerations(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.gpu.gpu_pod()) return;
  for (const auto& taint : ctx.policy.gpu_taints()) require(ctx, out, taint, nullptr);
  if (!ctx.pool) return;
  for (const auto& taint : ctx.pool->taints) require(ctx, out, taint, ctx.pool);
}

}  // namespace

constinit const RuleEntry kGpuTolerationsRule = rule_entry({
    .pod = check_gpu_tolerations,
    .refuses = "a GPU pod that does not tolerate every taint of `spec.defaults.gpuTaints` and of its pool's `taints`",
});

}  // namespace gpu_admission::policy
