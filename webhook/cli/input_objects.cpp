#include "webhook/cli/input_objects.h"

#include "webhook/cluster/watch_decoder.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {

std::optional<InputType> input_type(const Json& object) {
  if (!object.is_object()) return std::nullopt;
  const auto kind = object.find("kind");
  const auto api_version = object.find("apiVersion");
  if (kind == object.end() || !kind->is_string() || api_version == object.end() || !api_version->is_string())
    return std::nullopt;
  return InputType{kind->get_ref<const std::string&>(), api_version->get_ref<const std::string&>()};
}

bool parse_input(const Json& object, std::string& text, simdjson::dom::parser& parser, simdjson::dom::element& root) {
  text = to_json_text(object);
  return !cluster::allow_stored_depth(parser) && !parser.parse(text).get(root);
}

}  // namespace gpu_admission::webhook
