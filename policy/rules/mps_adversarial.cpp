// mps-adversarial: MPS shares one GPU context between processes with no memory or fault
// isolation, so a pod in an adversarial pool must have no path to it: the pool's device plugin
// sharing mode, an MPS node selector, CUDA_MPS_* env vars, MPS pipe directories, host IPC.
#include <array>

#include "policy/host_path.h"
#include "policy/rules/rule.h"

namespace gpu_admission::policy {
namespace {
constexpr std::string_view kSharingLabel = "nvidia.com/gpu.sharing-strategy";
constexpr std::array<std::string_view, 2> kMpsPipeDirs = {"/tmp/nvidia-mps", "/run/nvidia/mps"};
}  // namespace

void check_mps_adversarial(const RuleContext& ctx, RuleOutput& out) {
  if (!ctx.pool || ctx.pool->trust != Trust::Adversarial) return;
  const std::string pool = quoted(ctx.pool->name);

  if (ctx.pool->sharing == Sharing::Mps && ctx.gpu.gpu_pod())
    out.report(ctx.field("spec"), "pool " + pool + " is adversarial and shares its GPUs through MPS");

  bool found = false;
  if (ctx.pod.node_selector_value(kSharingLabel, &found) == "mps" && found)
    out.report(ctx.field("spec.nodeSelector[\"nvidia.com/gpu.sharing-strategy\"]"),
               "selects MPS nodes in adversarial pool " + pool);
  for (size_t t = 0; t < ctx.pod.required_node_affinity.size(); ++t) {
    const auto& term = ctx.pod.required_node_affinity[t];
    for (size_t e = 0; e < term.match_expressions.size(); ++e) {
      const auto& expr = term.match_expressions[e];
      if (expr.key != kSharingLabel || expr.op != "In") continue;
      for (auto v : expr.values) {
        if (v != "mps") continue;
        out.report(ctx.field("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[" +
                             std::to_string(t) + "].matchExpressions[" + std::to_string(e) + "]"),
                   "selects MPS nodes in adversarial pool " + pool);
      }
    }
  }
  for (const auto& c : ctx.pod.containers) {
    for (size_t i = 0; i < c.env_names.size(); ++i) {
      if (!c.env_names[i].starts_with("CUDA_MPS_")) continue;
      out.report(container_field(ctx.pod, c) + ".env[" + std::to_string(i) + "]",
                 container_label(c) + " sets " + std::string(c.env_names[i]) + " in adversarial pool " + pool);
    }
  }
  for (const auto& v : ctx.pod.host_paths) {
    std::string normalized = normalize_host_path(v.path);
    for (auto dir : kMpsPipeDirs) {
      if (!path_within(normalized, dir) && !path_exposes(normalized, dir)) continue;
      out.report(ctx.field("spec.volumes[" + std::to_string(v.index) + "].hostPath.path"),
                 "hostPath volume " + quoted(v.name) + " mounts " + quoted(v.path) +
                     ", which reaches the MPS pipe directory " + std::string(dir));
      break;
    }
  }
  if (ctx.pod.host_ipc)
    out.report(ctx.field("spec.hostIPC"), "hostIPC=true reaches MPS shared memory in adversarial pool " + pool);
}

}  // namespace gpu_admission::policy
