// gpu-device-access: ways around the device plugin or DRA driver. Env vars the NVIDIA container
// runtime or a GPU-sharing layer obeys (the built-in names and the policy's spec.gpuEnvVars, set
// directly or formed by an envFrom prefix), hostPath mounts that reach the GPU stack (the policy's
// host path table: device nodes, runtime state and device lists, kubelet sockets, CDI specs, and
// every directory above them), volume mounts where the NVIDIA toolkit reads a device list,
// device-injecting pod annotations, and DRA GPU requests with adminAccess (of a pod's claims, and
// of a claim on its own). Its other parts have files of their own (gpu_device_access.h): a GPU
// pod's runtime class, the device tolerations of DRA GPU requests, and DRA requests for every
// IMEX channel of a compute domain in adversarial pools.
#include <algorithm>
#include <array>

#include "policy/dra/gpu_request.h"
#include "policy/views/host_path.h"
#include "policy/evaluation/rules/rule.h"
#include "policy/evaluation/rules/gpu_device_access.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// Where the NVIDIA container toolkit reads volume mounts as a device list (a mount at
// <root>/all selects every GPU), normalized (/var/run is /run). The toolkit tests the mount's
// destination with a plain string prefix, so <root>all names device "all" too: a name prefix.
constexpr std::string_view kDeviceListMountRoot = "/run/nvidia-container-devices";
constexpr std::string_view kDeviceListMountName = "nvidia-container-devices";

// Calls on(name) for each env name the rule denies: the built-in ones, then the policy's own.
template <typename On>
bool any_device_env_var(const RuleContext& ctx, On&& on) {
  for (auto var : kDeviceEnvVars)
    if (on(var)) return true;
  for (const std::string& var : ctx.policy.gpu_env_vars())
    if (on(std::string_view(var))) return true;
  return false;
}

bool is_device_env_var(const RuleContext& ctx, std::string_view name) {
  return any_device_env_var(ctx, [&](std::string_view var) { return name == var; });
}

// The device env var that `prefix` + a non-empty key can spell, or "" when none.
std::string_view device_env_var_formed_by(const RuleContext& ctx, std::string_view prefix) {
  std::string_view formed;
  if (prefix.empty()) return formed;
  any_device_env_var(ctx, [&](std::string_view var) {
    if (var.size() <= prefix.size() || !var.starts_with(prefix)) return false;
    formed = var;
    return true;
  });
  return formed;
}

// Whether the pod's env was read for the policy's own names (PodView::policy_env_vars): a view
// decoded without them may lack the entries that name one, so it cannot be judged clean.
bool env_read_for_policy(const RuleContext& ctx) {
  const std::vector<std::string>& names = ctx.policy.gpu_env_vars();
  const std::span<const std::string> read = ctx.pod.policy_env_vars;
  if (names.empty() || (read.data() == names.data() && read.size() == names.size())) return true;
  return std::all_of(names.begin(), names.end(),
                     [&](const std::string& n) { return std::find(read.begin(), read.end(), n) != read.end(); });
}

// What hide-gpus sets: allowed only as the literal "void" in a container that asks for no GPU.
bool hides_gpus(const RuleContext& ctx, const ContainerView& c, const EnvVar& v) {
  return v.name == kVisibleDevicesEnv && !v.value_from && v.value == kVisibleDevicesVoid &&
         !container_asks_for_gpu(ctx.policy, c) && !container_uses_gpu_claim(c, ctx.gpu.claims);
}

// DRA: a GPU request with adminAccess reaches devices allocated to other pods.
void check_admin_access(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& e : ctx.gpu.claims.entries) {
    if (!e.resolved()) continue;
    for (const auto& r : e.gpus.requests) {
      if (!r.gpu || !r.admin_access) continue;
      out.report(claim_field(ctx, e),
                 e.describe() + " request " + quoted(r.name) +
                     " asks for adminAccess, which reaches GPUs allocated to other pods");
    }
  }
}

void check_env(const RuleContext& ctx, const ContainerView& c, RuleOutput& out) {
  auto field = [&] { return container_field(ctx.pod, c); };  // built only for a finding
  for (const EnvVar& v : c.env) {
    if (!is_device_env_var(ctx, v.name) || hides_gpus(ctx, c, v)) continue;
    std::string how = v.value_from ? " through valueFrom" : " to " + quoted(v.value);
    out.report(field() + ".env[" + std::to_string(v.index) + "]", container_label(c) + " sets " + bounded(v.name) + how +
                                                               ", which bypasses the device plugin");
  }
  for (const EnvFromSource& from : c.env_from) {
    std::string_view var = device_env_var_formed_by(ctx, from.prefix);
    if (var.empty()) continue;
    out.report(field() + ".envFrom[" + std::to_string(from.index) + "].prefix",
               container_label(c) + " imports envFrom with prefix " + quoted(from.prefix) + ", which can set " +
                   std::string(var) + " and bypass the device plugin");
  }
}

// A mount of any volume at the toolkit's device list root or under it. The component
// "nvidia-container-devices" survives normalization, so a path without it is not normalized.
void check_volume_mounts(const RuleContext& ctx, const ContainerView& c, RuleOutput& out) {
  for (const VolumeMount& m : c.volume_mounts) {
    if (m.mount_path.find(kDeviceListMountName) == std::string_view::npos) continue;
    const std::string normalized = normalize_host_path(m.mount_path);
    if (!normalized.starts_with(kDeviceListMountRoot)) continue;
    std::string at = quoted(m.mount_path);
    if (normalized != m.mount_path) at += " (" + bounded(normalized) + ")";
    out.report(container_field(ctx.pod, c) + ".volumeMounts[" + std::to_string(m.index) + "].mountPath",
               container_label(c) + " mounts volume " + quoted(m.name) + " at " + at +
                   ", where the NVIDIA container toolkit reads a device list: it bypasses the device plugin");
  }
}

void check_host_paths(const RuleContext& ctx, RuleOutput& out) {
  const HostPathTable& table = ctx.policy.gpu_host_paths();
  for (const auto& v : ctx.pod.host_paths) {
    const std::string normalized = normalize_host_path(v.path);
    const HostPathEntry* entry = table.find(normalized);
    if (!entry) continue;
    std::string mounts = quoted(v.path);
    if (normalized != v.path) mounts += " (" + bounded(normalized) + ")";
    out.report(ctx.field("spec.volumes[" + std::to_string(v.index) + "].hostPath.path"),
               "hostPath volume " + quoted(v.name) + " mounts " + mounts + ", which reaches " + entry->display + ": " +
                   entry->reason);
  }
}

// A key under a prefix, or the prefix itself without its trailing '/' (a runtime may read the
// bare key: the NRI CDI plugin reads "nvidia.cdi.k8s.io").
bool annotation_matches(std::string_view key, std::string_view prefix) {
  if (key.starts_with(prefix)) return true;
  return prefix.size() > 1 && prefix.back() == '/' && key == prefix.substr(0, prefix.size() - 1);
}

void check_annotations(const RuleContext& ctx, RuleOutput& out) {
  const auto& prefixes = ctx.policy.device_annotation_prefixes();
  for (const auto& [key, value] : ctx.pod.annotations) {
    for (const auto& prefix : prefixes) {
      if (!annotation_matches(key, prefix)) continue;
      out.report(ctx.field("metadata.annotations" + quoted_key(key)),
                 "annotation " + quoted(key) + " (prefix " + quoted(prefix) +
                     ") requests devices outside the device plugin");
      break;
    }
  }
}

void check_gpu_device_access(const RuleContext& ctx, RuleOutput& out) {
  if (!env_read_for_policy(ctx))
    out.report(ctx.field("spec"), "cannot judge env vars against spec.gpuEnvVars: the pod was decoded without them");
  for (const auto& c : ctx.pod.containers) {
    check_env(ctx, c, out);
    check_volume_mounts(ctx, c, out);
  }
  check_host_paths(ctx, out);
  check_annotations(ctx, out);
  check_admin_access(ctx, out);
  check_runtime_class(ctx, out);
  check_device_tolerations(ctx, out);
  check_imex_channels(ctx, out);
}

// A PodGroup: its claims' adminAccess and device tolerations, as each pod of the group has them.
void check_group_gpu_device_access(const RuleContext& ctx, RuleOutput& out) {
  check_admin_access(ctx, out);
  check_device_tolerations(ctx, out);
}

// A claim on its own: adminAccess, and tolerations spec.deviceTolerations does not allow.
void check_claim_gpu_device_access(const ClaimContext& ctx, RuleOutput& out) {
  for (const auto& r : ctx.gpus.requests) {
    if (!r.gpu || !r.admin_access) continue;
    out.report(ctx.request_field(r),
               "request " + quoted(r.name) + " asks for adminAccess, which reaches GPUs allocated to other pods");
  }
  check_claim_device_tolerations(ctx, out);
}

}  // namespace

constinit const RuleEntry kGpuDeviceAccessRule = rule_entry({
    .pod = check_gpu_device_access,
    .refuses =
        "routes to a GPU that bypass the device plugin or DRA driver: the env vars `NVIDIA_VISIBLE_DEVICES`, "
        "`NVIDIA_MIG_CONFIG_DEVICES`, `NVIDIA_MIG_MONITOR_DEVICES`, `NVIDIA_IMEX_CHANNELS`, `NVIDIA_MOFED`, "
        "`NVIDIA_NVSWITCH`, `NVIDIA_GDS`, `NVIDIA_GDRCOPY` (InfiniBand, NVSwitch, GPUDirect Storage and GDRCopy "
        "devices), `CUDA_DISABLE_CONTROL` (turns off HAMi's in-container limits) and those of `spec.gpuEnvVars` (as a "
        "value or through `valueFrom`; the one allowed case is `NVIDIA_VISIBLE_DEVICES=void` in a container that asks "
        "for no GPU, which is what `hide-gpus` writes), an `envFrom` prefix that could spell one of them; a `hostPath` "
        "volume on the built-in GPU path list or `spec.gpuHostPaths`, compared after normalizing the path "
        "(`/dev/../dev//nvidia0` is `/dev/nvidia0`); a `volumeMount` of any volume, in any container, whose "
        "`mountPath` is `/var/run/nvidia-container-devices` or under it after the same normalization (the NVIDIA "
        "toolkit reads mounts there as a device list; like the toolkit, a path that merely begins with it, "
        "`/var/run/nvidia-container-devicesall`, counts too); an annotation under `spec.deviceAnnotationPrefixes` or "
        "equal to one without its trailing `/`; a DRA GPU request with `adminAccess: true`, or with a toleration "
        "`spec.deviceTolerations` does not allow (`adminAccess` is refused in every namespace this policy does not "
        "exempt, also where the API server allows it: a namespace labelled "
        "`resource.kubernetes.io/admin-access: \"true\"`); a GPU pod whose `runtimeClassName` is missing or not in "
        "its pool's `runtimeClasses` (else `spec.runtimeClasses`) when that list is set; in a pool with `trust: "
        "adversarial`, a DRA request that reaches every IMEX channel of a compute domain (Multi-Node NVLink memory "
        "sharing): `allocationMode: All` or a `count` above 1 on a `spec.deviceClasses.imex` class, or a "
        "`compute-domain.nvidia.com` configuration asking for all channels (`ComputeDomainChannelConfig` with "
        "`allocationMode: All`) or for the domain's IMEX daemon (`ComputeDomainDaemonConfig`), unless the request's "
        "device class is in `spec.deviceClasses.imexAllowed`",
    .claim = check_claim_gpu_device_access,
    .claim_refuses = "a GPU request with `adminAccess: true`, or with a toleration `spec.deviceTolerations` does not "
                     "allow",
    .group = check_group_gpu_device_access,
    .group_refuses = "a claim of the group with a GPU request with `adminAccess: true`, or with a toleration "
                     "`spec.deviceTolerations` does not allow",
});

}  // namespace gpu_admission::policy
