// gpu-device-access, one of its checks: a GPU pod's runtime class (container runtimes differ in
// how they hand GPUs to containers and isolate them: a platform lists the ones it has checked).
#include "policy/evaluation/rules/gpu_device_access.h"

#include <algorithm>
#include <vector>

namespace gpu_admission::policy {
namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + quoted(n);
  return out;
}

}  // namespace

void check_runtime_class(const RuleContext& ctx, RuleOutput& out) {
  const std::vector<std::string>& allowed = ctx.policy.runtime_classes_for(ctx.pool);
  if (allowed.empty() || !ctx.gpu.gpu_pod()) return;
  const std::string_view name = ctx.pod.runtime_class_name;
  if (!name.empty() && std::find(allowed.begin(), allowed.end(), name) != allowed.end()) return;
  const bool from_pool = ctx.pool && !ctx.pool->runtime_classes.empty();
  const std::string who = from_pool ? "pool " + quoted(ctx.pool->name) + " allows" : "spec.runtimeClasses allows";
  const std::string uses = name.empty() ? "sets no runtimeClassName, so it runs with the node's default runtime handler"
                                        : "uses runtimeClassName " + quoted(name);
  out.report(ctx.field("spec.runtimeClassName"), "GPU pod " + uses + "; " + who + " only " + quoted_list(allowed) +
                                                     " (runtimes differ in how they isolate GPUs)");
}

}  // namespace gpu_admission::policy
