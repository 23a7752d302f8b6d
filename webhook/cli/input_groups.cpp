#include "webhook/cli/input_groups.h"

namespace gpu_admission::webhook {

InputGroups::InputGroups() = default;
InputGroups::~InputGroups() = default;

bool InputGroups::add(const Json& object, const std::string& default_namespace) {
  return objects_.add(
      object, default_namespace,
      [](const InputType& type) {
        return type.kind == policy::kPodGroupKind && policy::pod_group_api_version_supported(type.api_version);
      },
      [](simdjson::dom::element root, policy::PodGroupView& view) { return policy::decode_pod_group(root, view); });
}

const policy::PodGroupView* InputGroups::find_group(std::string_view namespace_name, std::string_view name) const {
  return objects_.find(namespace_name, name, [](const policy::PodGroupView&) { return true; });
}

}  // namespace gpu_admission::webhook
