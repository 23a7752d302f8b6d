#include "webhook/cli/input_namespaces.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kNameLabel = "kubernetes.io/metadata.name";

policy::LabelPairs with_name_label(policy::LabelPairs labels, std::string_view name) {
  for (const auto& [k, v] : labels)
    if (k == kNameLabel) return labels;
  labels.emplace_back(kNameLabel, std::string(name));
  return labels;
}

}  // namespace

bool InputNamespaces::add(const Json& object) {
  if (!object.is_object() || !object.contains("kind") || object["kind"] != "Namespace") return false;
  const Json& metadata = object.contains("metadata") ? object["metadata"] : Json();
  if (!metadata.is_object() || !metadata.contains("name") || !metadata["name"].is_string()) return false;
  const std::string name = metadata["name"].get<std::string>();
  policy::LabelPairs labels;
  if (metadata.contains("labels") && metadata["labels"].is_object()) {
    for (auto it = metadata["labels"].begin(); it != metadata["labels"].end(); ++it)
      if (it->is_string()) labels.emplace_back(it.key(), it->get<std::string>());
  }
  namespaces_[name] = with_name_label(std::move(labels), name);
  return true;
}

const policy::LabelPairs* InputNamespaces::labels_of(std::string_view namespace_name) const {
  if (auto it = namespaces_.find(namespace_name); it != namespaces_.end()) return &it->second;
  std::lock_guard lock(mutex_);
  auto it = fallback_by_name_.find(namespace_name);
  if (it == fallback_by_name_.end())
    it = fallback_by_name_.emplace(std::string(namespace_name), with_name_label(fallback_, namespace_name)).first;
  return &it->second;
}

std::optional<policy::LabelPairs> parse_label_list(std::string_view text, std::string& error) {
  policy::LabelPairs out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      error = "\"" + std::string(item) + "\" is not key=value";
      return std::nullopt;
    }
    out.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace gpu_admission::webhook
