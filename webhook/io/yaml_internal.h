// What the files behind yaml_json.h share (internal to webhook/io/; not included elsewhere):
//   yaml_json.cpp    parse_yaml_or_json (input checks, JSON detection, the JSON path), to_json_text
//   yaml_reader.cpp  the YAML path: yaml-cpp events -> JSON trees with source marks
//   yaml_deep.cpp    libyaml's events, spelled as yaml-cpp's, for streams deeper than yaml-cpp reads
//   yaml_writer.cpp  to_yaml
//   yaml_scalar.cpp  YAML 1.2 core schema resolution of plain scalars, and tagged scalars as
//                    kubectl reads them
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/mark.h>

#include "webhook/io/yaml_json.h"

namespace YAML {
class EventHandler;
}

namespace gpu_admission::webhook::detail {

// YAML 1.2 core schema resolution of a plain scalar: null, bool, integer, float, or the text
// itself (also for numbers out of range, infinities and NaN, which JSON cannot hold).
Json resolve_plain(const std::string& s);

// A scalar with the tag yaml-cpp reports ("?" plain untagged, "!" quoted, else the resolved tag)
// read as kubectl's reader (sigs.k8s.io/yaml, go-yaml v2) reads it: `!!binary` is base64-decoded
// (it must decode to UTF-8 text); `!!int`, `!!float`, `!!bool` and `!!null` must hold a value of
// that type (else an error, as kubectl refuses them); `!!str` and quoting keep the text; other
// tags (`!!timestamp`, local `!tags`) keep the text as kubectl does.
struct TaggedScalar {
  Json value;
  std::optional<std::string> error;
};
TaggedScalar resolve_tagged(const std::string& tag, const std::string& text);

// Every document of a YAML stream (text already checked for invalid UTF-8 and control
// characters). Errors are prefixed "invalid YAML: "; on error no documents are returned.
YamlParse parse_yaml_stream(std::string_view text, const YamlLimits& limits);

// Hands every event of libyaml's parser over `text` to `handler`, spelled as yaml-cpp spells
// them (tags, anchors, marks), until the stream ends or `stop()` says so. libyaml keeps its
// stacks on the heap, so any depth is read; parse_yaml_stream uses it where yaml-cpp stops
// (500 levels). Returns libyaml's error, or that of an alias naming no anchor of its document.
struct YamlEventError {
  std::string message;
  YAML::Mark mark;
};
std::optional<YamlEventError> parse_deep_yaml(std::string_view text, YAML::EventHandler& handler,
                                              const std::function<bool()>& stop);

}  // namespace gpu_admission::webhook::detail
