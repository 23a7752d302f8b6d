#include "policy/decoding/pod_commit_point.h"

#include <array>
#include <string>
#include <utility>

namespace gpu_admission::policy {
namespace {

// The fields of spec whose change moves a pod (or changes what it is given), with the commit
// point each one is. Compared as the API server stores them (minified JSON), absent vs present
// included: a false difference only means the UPDATE is judged in full.
constexpr std::array<std::pair<std::string_view, CommitPoint>, 6> kMovingFields = {{
    {"nodeSelector", CommitPoint::NodeSelector},
    {"affinity", CommitPoint::Affinity},
    {"tolerations", CommitPoint::Tolerations},
    {"resourceClaims", CommitPoint::ResourceClaims},
    {"schedulingGroup", CommitPoint::SchedulingGroup},
    {"workloadRef", CommitPoint::SchedulingGroup},
}};

constexpr std::array<std::string_view, 8> kDescriptions = {
    "",
    "cannot be compared with the pod before it",
    "removes the pod's last scheduling gate",
    "changes spec.nodeSelector",
    "changes spec.affinity",
    "changes spec.tolerations",
    "changes spec.resourceClaims",
    "changes the pod's scheduling group",
};

size_t gate_count(simdjson::dom::object spec) {
  simdjson::dom::array gates;
  if (spec["schedulingGates"].get_array().get(gates) != simdjson::SUCCESS) return 0;
  return gates.size();
}

}  // namespace

std::string_view describe(CommitPoint point) { return kDescriptions[static_cast<size_t>(point)]; }

CommitPoint pod_commit_point(simdjson::dom::element object, simdjson::dom::element old_object) {
  simdjson::dom::object spec, old_spec;
  if (object["spec"].get_object().get(spec) != simdjson::SUCCESS ||
      old_object["spec"].get_object().get(old_spec) != simdjson::SUCCESS)
    return CommitPoint::Unknown;
  if (gate_count(old_spec) > 0 && gate_count(spec) == 0) return CommitPoint::Ungated;
  for (const auto& [key, point] : kMovingFields) {
    simdjson::dom::element now, before;
    const bool has_now = spec[key].get(now) == simdjson::SUCCESS;
    const bool had = old_spec[key].get(before) == simdjson::SUCCESS;
    if (has_now != had || (has_now && simdjson::minify(now) != simdjson::minify(before))) return point;
  }
  return CommitPoint::None;
}

}  // namespace gpu_admission::policy
