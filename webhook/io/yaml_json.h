// YAML and JSON text -> JSON trees, with the source line/column of every field kept in a
// SourceMap; and JSON trees -> YAML text. The only YAML code in the project: manifests and
// policies both come through here, then go through the one JSON decoding path.
// Guards: nesting depth, node count (anchors, aliases and merges cannot blow up memory), duplicate
// keys. Merge keys (`<<`) are expanded as kubectl reads them (see yaml_reader.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/json.h"
#include "policy/base/source.h"

namespace gpu_admission::webhook {

struct YamlDocument {
  Json value;
  policy::SourceMap marks;  // field path -> line/column
  int line = 0;             // 1-based line where the document starts
};

struct YamlError {
  std::string message;
  policy::SourceMark mark;
};

// How deep objects read from files and standard input may nest (`check`, `test`, `audit`): as deep
// as the API server stores them (its JSON decoding refuses more than 10,000 levels), so whatever a
// cluster holds can be read from its dump. Neither parse recurses per level (yaml_reader.cpp).
inline constexpr int kMaxObjectDepth = 10'000;

struct YamlLimits {
  int max_depth = 128;  // policies and kubeconfigs; objects: kMaxObjectDepth
  size_t max_nodes = 1'000'000;  // after alias expansion
  bool record_marks = true;
};

struct YamlParse {
  std::vector<YamlDocument> documents;  // empty documents are left out
  std::optional<YamlError> error;
};

// Parses every document of a YAML stream, or a JSON text (detected by its first character).
YamlParse parse_yaml_or_json(std::string_view text, const YamlLimits& limits = {});

struct YamlWriteOptions {
  // Strings of several lines as literal block scalars (`|-`) where they read back the same, for
  // text meant to be read (the backstop's CEL expressions); else every string stays on one line.
  bool literal_blocks = false;
};

// YAML text of a JSON tree (block style; strings that would read back as another type are quoted).
std::string to_yaml(const Json& value, const YamlWriteOptions& options = {});

// Compact JSON text that never throws on invalid UTF-8 (it is replaced).
std::string to_json_text(const Json& value, int indent = -1);

}  // namespace gpu_admission::webhook
