#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {

const std::array<RuleDef, kRuleCount>& rule_table() {
  static const std::array<RuleDef, kRuleCount> table = {{
      {RuleId::Privileged, "privileged container", check_privileged},
      {RuleId::HostNamespaces, "host namespaces", check_host_namespaces},
      {RuleId::GpuDeviceAccess, "GPU access around the device plugin", check_gpu_device_access},
      {RuleId::GpuCap, "GPU request over the cap", check_gpu_cap},
      {RuleId::MpsAdversarial, "MPS in an adversarial pool", check_mps_adversarial},
      {RuleId::GpuTolerations, "missing GPU tolerations", check_gpu_tolerations},
      {RuleId::TenantPool, "pool not allowed for tenant", check_tenant_pool},
      {RuleId::TenantLabel, "tenant label mismatch", check_tenant_label},
      {RuleId::MigProfile, "invalid MIG resource", check_mig_profile},
      {RuleId::GpuSharing, "GPU sharing without isolation in an adversarial pool", check_gpu_sharing},
  }};
  return table;
}

std::string RuleContext::field(std::string_view pod_relative) const { return pod_field(pod, pod_relative); }

std::string quoted(std::string_view s) {
  std::string out = "\"";
  out += s;
  out += '"';
  return out;
}

std::string container_label(const ContainerView& c) {
  std::string out;
  switch (c.kind) {
    case ContainerKind::Init: out = c.restartable ? "sidecar container " : "init container "; break;
    case ContainerKind::App: out = "container "; break;
    case ContainerKind::Ephemeral: out = "ephemeral container "; break;
  }
  out += quoted(c.name);
  return out;
}

std::string resource_field(const RuleContext& ctx, const ContainerView& c, bool limits, std::string_view resource) {
  std::string out = container_field(ctx.pod, c);
  out += limits ? ".resources.limits[\"" : ".resources.requests[\"";
  out += resource;
  out += "\"]";
  return out;
}

std::string claim_field(const RuleContext& ctx, const PodClaimGpus& claim) {
  return ctx.field("spec.resourceClaims[" + std::to_string(claim.ref->index) + "]");
}

std::string unresolved_claim_message(const PodClaimGpus& claim, std::string_view what) {
  if (claim.object_name.empty()) return "resourceClaims entry " + quoted(claim.ref->name) + " names no claim or template";
  std::string text = "cannot ";
  text += what;
  text += claim.kind == ClaimKind::Template ? " of ResourceClaimTemplate " : " of ResourceClaim ";
  text += claim.object_name;
  text += ": not found";
  return text;
}

std::string NodeConstraint::describe() const {
  std::string out(key);
  if (selector) return out + "=" + std::string(values.empty() ? std::string_view{} : values.front());
  out += " ";
  out += op;
  if (values.empty() && (op == "Exists" || op == "DoesNotExist")) return out;
  out += " [";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += values[i];
  }
  return out + "]";
}

}  // namespace gpu_admission::policy
