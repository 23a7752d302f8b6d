// privileged: any container, of any kind, with securityContext.privileged: true.
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {
namespace {

void check_privileged(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& c : ctx.pod.containers) {
    if (!c.privileged) continue;
    out.report(container_field(ctx.pod, c) + ".securityContext.privileged", container_label(c) + " is privileged");
  }
}

}  // namespace

constinit const RuleEntry kPrivilegedRule = rule_entry({
    .pod = check_privileged,
    .refuses = "a container with `securityContext.privileged: true`",
});

}  // namespace gpu_admission::policy
