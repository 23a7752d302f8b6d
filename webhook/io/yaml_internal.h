// What the files behind yaml_json.h share (internal to webhook/io/; not included elsewhere):
//   yaml_json.cpp    parse_yaml_or_json (input checks, JSON detection, the JSON path), to_json_text
//   yaml_reader.cpp  the YAML path: yaml-cpp events -> JSON trees with source marks
//   yaml_writer.cpp  to_yaml
//   yaml_scalar.cpp  YAML 1.2 core schema resolution of plain scalars
#pragma once

#include <string>
#include <string_view>

#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook::detail {

// YAML 1.2 core schema resolution of a plain scalar: null, bool, integer, float, or the text
// itself (also for numbers out of range, infinities and NaN, which JSON cannot hold).
Json resolve_plain(const std::string& s);

// Every document of a YAML stream (text already checked for invalid UTF-8 and control
// characters). Errors are prefixed "invalid YAML: "; on error no documents are returned.
YamlParse parse_yaml_stream(std::string_view text, const YamlLimits& limits);

}  // namespace gpu_admission::webhook::detail
