// The objects of one API kind among the inputs of `check` (and a `test` case's `objects:`),
// indexed by namespace and name, for the lookup interface the evaluator reads (InputClaims,
// InputGroups). Each object keeps its own JSON text and parsed document, which its decoded view
// points into; an object that names no namespace belongs to the default namespace it was added
// with.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "policy/base/json.h"
#include "policy/decoding/pod_decoder.h"  // DecodeError

namespace gpu_admission::webhook {

// The kind and apiVersion of `object` when it is a JSON object with both as strings.
struct InputType {
  std::string_view kind, api_version;
};
std::optional<InputType> input_type(const Json& object);

// Parses `object`'s JSON text (kept in `text`) into `parser`, at the depth cluster state allows
// stored objects; false when it cannot be.
bool parse_input(const Json& object, std::string& text, simdjson::dom::parser& parser, simdjson::dom::element& root);

template <typename View>
class InputObjects {
 public:
  // Adds `object` when `accepts(InputType)` and `decode(root, view)` decodes it (returns no
  // DecodeError). Returns false for anything else.
  template <typename Accepts, typename Decode>
  bool add(const Json& object, const std::string& default_namespace, Accepts accepts, Decode decode) {
    const std::optional<InputType> type = input_type(object);
    if (!type || !accepts(*type)) return false;
    auto entry = std::make_unique<Entry>();
    simdjson::dom::element root;
    if (!parse_input(object, entry->text, entry->parser, root) || decode(root, entry->view)) return false;
    entry->namespace_name =
        entry->view.namespace_name.empty() ? default_namespace : std::string(entry->view.namespace_name);
    entries_.push_back(std::move(entry));
    return true;
  }

  // The first object of `namespace_name`/`name` for which `matches(view)`, or nullptr.
  template <typename Matches>
  const View* find(std::string_view namespace_name, std::string_view name, Matches matches) const {
    for (const auto& e : entries_)
      if (e->view.name == name && e->namespace_name == namespace_name && matches(e->view)) return &e->view;
    return nullptr;
  }

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string text;
    simdjson::dom::parser parser;
    View view;
    std::string namespace_name;
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace gpu_admission::webhook
