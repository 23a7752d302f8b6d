// DRA device tolerations against spec.deviceTolerations; see device_tolerations.h.
#include "policy/evaluation/device_tolerations.h"

#include <string_view>

#include "policy/base/quoted_value.h"

namespace gpu_admission::policy {
namespace {

enum class Op : uint8_t { Exists, Equal, Unknown };

Op op_of(std::string_view op) {
  if (op == "Exists") return Op::Exists;
  if (op.empty() || op == "Equal") return Op::Equal;  // Equal is the API's default
  return Op::Unknown;
}

Toleration view_of(const TolerationConfig& c) { return {c.key, c.op, c.value, c.effect}; }

// The request's part of a field path: "requests[0]" plus ".exactly", ".firstAvailable[k]" or,
// for a v1beta1 request with its fields flat, nothing.
std::string subrequest_field(const ClaimView& claim, const DeviceRequestView& request, size_t alternative) {
  std::string out = "requests[" + std::to_string(request.index) + "]";
  if (request.first_available) return out + ".firstAvailable[" + std::to_string(alternative) + "]";
  if (claim.api_version == "resource.k8s.io/v1beta1") return out;
  return out + ".exactly";
}

}  // namespace

bool toleration_allows(const Toleration& allowed, const Toleration& requested) {
  const Op a = op_of(allowed.op), t = op_of(requested.op);
  if (a == Op::Unknown || t == Op::Unknown) return false;
  // An entry with an effect tolerates taints of that effect only, and a toleration without one
  // tolerates every effect.
  if (!allowed.effect.empty() && allowed.effect != requested.effect) return false;
  if (a == Op::Exists) return allowed.key.empty() || allowed.key == requested.key;
  // Equal: exactly the taints with this key and value (an empty key names no taint).
  return !allowed.key.empty() && t == Op::Equal && requested.key == allowed.key && requested.value == allowed.value;
}

bool device_toleration_allowed(const std::vector<TolerationConfig>& allowed, const Toleration& requested) {
  for (const auto& entry : allowed)
    if (toleration_allows(view_of(entry), requested)) return true;
  return false;
}

void find_disallowed_tolerations(const CompiledPolicy& policy, const ClaimView& claim,
                                 std::vector<DisallowedToleration>& out) {
  const auto& allowed = policy.device_tolerations();
  for (const DeviceRequestView& request : claim.requests) {
    for (size_t k = 0; k < request.alternatives.size(); ++k) {
      const DeviceSubrequest& sub = request.alternatives[k];
      if (sub.tolerations.empty() || policy.classify_device_class(sub.device_class) == CompiledPolicy::GpuKind::NotGpu)
        continue;
      for (size_t j = 0; j < sub.tolerations.size(); ++j) {
        if (device_toleration_allowed(allowed, sub.tolerations[j])) continue;
        out.push_back({&request, &sub, &sub.tolerations[j],
                       subrequest_field(claim, request, k) + ".tolerations[" + std::to_string(j) + "]"});
      }
    }
  }
}

std::string toleration_text(const Toleration& t) {
  std::string out = "{";
  auto add = [&](std::string_view name, std::string value) {
    if (out.size() > 1) out += ", ";
    out += std::string(name) + ": " + value;
  };
  if (!t.key.empty()) add("key", quoted(t.key));
  add("operator", t.op.empty() ? std::string("Equal") : bounded(t.op));
  if (!t.value.empty()) add("value", quoted(t.value));
  if (!t.effect.empty()) add("effect", bounded(t.effect));
  return out + "}";
}

std::string disallowed_toleration_message(const ClaimView& claim, const DisallowedToleration& d) {
  std::string what = op_of(d.toleration->op) == Op::Exists && d.toleration->key.empty() ? "every device taint"
                                                                                         : "device taints";
  std::string name(d.request->name);
  if (d.request->first_available) name += "/" + std::string(d.subrequest->name);
  return "request " + quoted(name) + " tolerates " + what + " " + toleration_text(*d.toleration) +
         " (" + std::string(claim.devices_field()) + "." + d.field + "), which spec.deviceTolerations does not allow" +
         " (device taints fence broken GPUs or reserve them for others)";
}

}  // namespace gpu_admission::policy
