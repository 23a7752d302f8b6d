// The rule registry, generated from policy/base/rules.def: the entry of each rule in RuleId
// order, and the helpers rules share.
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {

namespace {

constexpr std::array<const RuleEntry*, kRuleCount> kEntries = {
#define GPU_ADMISSION_RULE(Enum, id, reason, categories) &k##Enum##Rule,
#include "policy/base/rules.def"
#undef GPU_ADMISSION_RULE
};

}  // namespace

const std::array<const RuleEntry*, kRuleCount>& rule_entries() { return kEntries; }

std::string RuleContext::field(std::string_view pod_relative) const { return pod_field(pod, pod_relative); }

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
  out += limits ? ".resources.limits" : ".resources.requests";
  out += quoted_key(resource);
  return out;
}

std::string ClaimContext::request_field(const RequestGpus& r) const {
  return std::string(claim.devices_field()) + ".requests[" + std::to_string(r.index) + "]";
}

std::string claim_field(const RuleContext& ctx, const PodClaimGpus& claim) {
  // A claim of the pod's group comes through the field that names the group.
  if (claim.from_group()) return ctx.field("spec.schedulingGroup.podGroupName");
  return ctx.field("spec.resourceClaims[" + std::to_string(claim.ref->index) + "]");
}

std::string unresolved_claim_message(const PodClaimGpus& claim, std::string_view what) {
  if (claim.group_missing)
    return "cannot " + std::string(what) + " of PodGroup " + bounded(claim.group) +
           ": not found (the claims in its spec.resourceClaims are this pod's too): create the PodGroup before "
           "its pods";
  if (claim.object_name.empty()) {
    std::string text = "resourceClaims entry " + quoted(claim.ref->name) + " names no claim or template";
    return claim.from_group() ? "PodGroup " + bounded(claim.group) + "'s " + text : text;
  }
  std::string text = "cannot ";
  text += what;
  text += claim.kind == ClaimKind::Template ? " of ResourceClaimTemplate " : " of ResourceClaim ";
  text += bounded(claim.object_name);
  if (claim.from_group()) text += " of PodGroup " + bounded(claim.group);
  text += ": not found";
  return text;
}

std::string NodeConstraint::describe() const {
  std::string out = bounded(key);
  if (selector) return out + "=" + bounded(values.empty() ? std::string_view{} : values.front());
  out += " ";
  out += bounded(op);
  if (values.empty() && (op == "Exists" || op == "DoesNotExist")) return out;
  // A tenant's list is shown up to kShownValues values, then counted: "[a, b, … (300 values)]".
  constexpr size_t kShownValues = 8;
  out += " [";
  for (size_t i = 0; i < values.size() && i < kShownValues; ++i) {
    if (i) out += ", ";
    out += bounded(values[i]);
  }
  if (values.size() > kShownValues) out += ", \u2026 (" + std::to_string(values.size()) + " values)";
  return out + "]";
}

}  // namespace gpu_admission::policy
