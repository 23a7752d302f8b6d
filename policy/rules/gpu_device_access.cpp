// gpu-device-access: ways around the device plugin. Env vars the NVIDIA container runtime obeys,
// hostPath mounts of GPU device nodes, runtime device lists or a directory that contains them,
// and CDI device annotations.
#include <array>

#include "policy/host_path.h"
#include "policy/rules/rule.h"

namespace gpu_admission::policy {
namespace {

constexpr std::array<std::string_view, 4> kDeviceEnvVars = {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES",
                                                            "NVIDIA_MIG_MONITOR_DEVICES", "NVIDIA_IMEX_CHANNELS"};

// Paths (normalized, /var/run folded into /run) whose mount reaches GPU devices.
std::string_view device_path_reason(const std::string& p) {
  if (p.starts_with("/dev/nvidia")) return "an NVIDIA device node";
  if (path_within(p, "/dev/dri")) return "the DRI device directory";
  if (p.starts_with("/run/nvidia")) return "NVIDIA runtime state and device lists";
  // Directories that contain device nodes or device lists.
  for (std::string_view dir : {"/", "/dev", "/run", "/var"})
    if (p == dir) return "a directory that contains GPU devices or device lists";
  return {};
}

}  // namespace

void check_gpu_device_access(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& c : ctx.pod.containers) {
    for (size_t i = 0; i < c.env_names.size(); ++i) {
      for (auto var : kDeviceEnvVars) {
        if (c.env_names[i] != var) continue;
        out.report(container_field(ctx.pod, c) + ".env[" + std::to_string(i) + "]",
                   container_label(c) + " sets " + std::string(var) + ", which bypasses the device plugin");
      }
    }
  }
  for (const auto& v : ctx.pod.host_paths) {
    std::string normalized = normalize_host_path(v.path);
    std::string_view reason = device_path_reason(normalized);
    if (reason.empty()) continue;
    out.report(ctx.field("spec.volumes[" + std::to_string(v.index) + "].hostPath.path"),
               "hostPath volume " + quoted(v.name) + " mounts " + quoted(v.path) + ", " + std::string(reason));
  }
  for (const auto& [key, value] : ctx.pod.annotations) {
    if (!key.starts_with("cdi.k8s.io/")) continue;
    out.report(ctx.field("metadata.annotations[\"" + std::string(key) + "\"]"),
               "CDI annotation " + quoted(key) + " requests devices outside the device plugin");
  }
}

}  // namespace gpu_admission::policy
