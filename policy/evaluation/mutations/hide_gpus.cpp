// hide-gpus: every container that asks for no GPU, neither through its resources nor through a
// DRA claim, gets NVIDIA_VISIBLE_DEVICES=void, unless it
// sets that variable itself. An explicit env entry overrides the image's ENV (every CUDA base
// image sets NVIDIA_VISIBLE_DEVICES=all) and envFrom, so the NVIDIA runtime shows such a
// container none of the node's GPUs. Ephemeral containers cannot be part of a CREATE. A pod with a
// spec.gpuSharingAnnotations annotation is left alone: the scheduler that shares the GPU (KAI,
// Run:ai) decides which of its containers get the share, and `void` would take it away.
#include <algorithm>

#include "policy/dra/gpu_request.h"
#include "policy/evaluation/mutations/mutation.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {

bool mutate_hide_gpus(MutationContext& ctx) {
  if (gpu_sharing_annotation(ctx.policy, ctx.pod)) return false;
  bool changed = false;
  for (auto& c : ctx.pod.containers) {
    if (c.kind == ContainerKind::Ephemeral) continue;
    if (container_asks_for_gpu(ctx.policy, c) || container_uses_gpu_claim(c, ctx.claims)) continue;
    if (std::any_of(c.env.begin(), c.env.end(), [](const EnvVar& v) { return v.name == kVisibleDevicesEnv; })) continue;
    ctx.patcher.add_env(c, kVisibleDevicesEnv, kVisibleDevicesVoid);
    changed = true;
  }
  return changed;
}

}  // namespace gpu_admission::policy
