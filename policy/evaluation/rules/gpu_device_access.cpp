// gpu-device-access: ways around the device plugin or DRA driver. Env vars the NVIDIA container
// runtime obeys (set directly, or formed by an envFrom prefix), hostPath mounts that reach the
// GPU stack (the policy's host path table: device nodes, runtime state and device lists, kubelet
// sockets, CDI specs, and every directory above them), and device-injecting pod annotations.
#include <array>

#include "policy/dra/gpu_request.h"
#include "policy/views/host_path.h"
#include "policy/evaluation/rules/rule.h"
#include "policy/evaluation/rules/gpu_runtime_and_tolerations.h"
#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

bool is_device_env_var(std::string_view name) {
  for (auto var : kDeviceEnvVars)
    if (name == var) return true;
  return false;
}

// The device env var that `prefix` + a non-empty key can spell, or "" when none.
std::string_view device_env_var_formed_by(std::string_view prefix) {
  if (prefix.empty()) return {};
  for (auto var : kDeviceEnvVars)
    if (var.size() > prefix.size() && var.starts_with(prefix)) return var;
  return {};
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
    if (!is_device_env_var(v.name) || hides_gpus(ctx, c, v)) continue;
    std::string how = v.value_from ? " through valueFrom" : " to " + quoted(v.value);
    out.report(field() + ".env[" + std::to_string(v.index) + "]", container_label(c) + " sets " + std::string(v.name) + how +
                                                               ", which bypasses the device plugin");
  }
  for (const EnvFromSource& from : c.env_from) {
    std::string_view var = device_env_var_formed_by(from.prefix);
    if (var.empty()) continue;
    out.report(field() + ".envFrom[" + std::to_string(from.index) + "].prefix",
               container_label(c) + " imports envFrom with prefix " + quoted(from.prefix) + ", which can set " +
                   std::string(var) + " and bypass the device plugin");
  }
}

void check_host_paths(const RuleContext& ctx, RuleOutput& out) {
  const HostPathTable& table = ctx.policy.gpu_host_paths();
  for (const auto& v : ctx.pod.host_paths) {
    const std::string normalized = normalize_host_path(v.path);
    const HostPathEntry* entry = table.find(normalized);
    if (!entry) continue;
    std::string mounts = quoted(v.path);
    if (normalized != v.path) mounts += " (" + normalized + ")";
    out.report(ctx.field("spec.volumes[" + std::to_string(v.index) + "].hostPath.path"),
               "hostPath volume " + quoted(v.name) + " mounts " + mounts + ", which reaches " + entry->display + ": " +
                   entry->reason);
  }
}

void check_annotations(const RuleContext& ctx, RuleOutput& out) {
  const auto& prefixes = ctx.policy.device_annotation_prefixes();
  for (const auto& [key, value] : ctx.pod.annotations) {
    for (const auto& prefix : prefixes) {
      if (!key.starts_with(prefix)) continue;
      out.report(ctx.field("metadata.annotations[\"" + std::string(key) + "\"]"),
                 "annotation " + quoted(key) + " (prefix " + quoted(prefix) +
                     ") requests devices outside the device plugin");
      break;
    }
  }
}

}  // namespace

void check_gpu_device_access(const RuleContext& ctx, RuleOutput& out) {
  for (const auto& c : ctx.pod.containers) check_env(ctx, c, out);
  check_host_paths(ctx, out);
  check_annotations(ctx, out);
  check_admin_access(ctx, out);
  check_runtime_class(ctx, out);
  check_device_tolerations(ctx, out);
}

}  // namespace gpu_admission::policy
