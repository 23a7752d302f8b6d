#include "webhook/cli/input_groups.h"

#include <simdjson.h>

#include "webhook/cluster/watch_decoder.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {

struct InputGroups::Entry {
  std::string text;
  simdjson::dom::parser parser;
  policy::PodGroupView view;
  std::string namespace_name;
};

InputGroups::InputGroups() = default;
InputGroups::~InputGroups() = default;

bool InputGroups::add(const Json& object, const std::string& default_namespace) {
  if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string() ||
      object["kind"].get<std::string>() != policy::kPodGroupKind)
    return false;
  auto api_version = object.find("apiVersion");
  if (api_version == object.end() || !api_version->is_string() ||
      !policy::pod_group_api_version_supported(api_version->get<std::string>()))
    return false;
  auto entry = std::make_unique<Entry>();
  entry->text = to_json_text(object);
  simdjson::dom::element root;
  if (cluster::allow_stored_depth(entry->parser) || entry->parser.parse(entry->text).get(root)) return false;
  if (policy::decode_pod_group(root, entry->view)) return false;
  entry->namespace_name =
      entry->view.namespace_name.empty() ? default_namespace : std::string(entry->view.namespace_name);
  entries_.push_back(std::move(entry));
  return true;
}

const policy::PodGroupView* InputGroups::find_group(std::string_view namespace_name, std::string_view name) const {
  for (const auto& e : entries_)
    if (e->view.name == name && e->namespace_name == namespace_name) return &e->view;
  return nullptr;
}

}  // namespace gpu_admission::webhook
