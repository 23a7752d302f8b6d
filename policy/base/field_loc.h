// A field location built on the stack while descending into a JSON document, rendered to text
// only on error, as `spec.containers[0].env[2].name` or `metadata.labels["app.kubernetes.io/name"]`.
// Shared by the DOM reader (policy/decoding/dom_reader.h) and the On-Demand reader (policy/decoding/json_reader.h).
// Keys are the document's (a tenant's): each is shown bounded (quoted_value.h).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "policy/base/quoted_value.h"

namespace gpu_admission::policy {

inline bool identifier_like(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

struct Loc {
  const Loc* parent = nullptr;
  std::string_view key;  // object member, or empty for an array index
  long index = -1;       // array index when >= 0
  bool quote = false;    // render as ["key"] (map keys such as label names)
  bool quote_if_needed = false;

  Loc child(std::string_view k) const { return Loc{this, k, -1, false}; }
  Loc item(size_t i) const { return Loc{this, {}, static_cast<long>(i), false}; }
  Loc map_key(std::string_view k) const { return Loc{this, k, -1, true}; }
  // A key rendered plain when it is identifier-like, quoted otherwise (decided only on error).
  Loc auto_key(std::string_view k) const { return Loc{this, k, -1, false, true}; }

  void render(std::string& out) const {
    if (parent) parent->render(out);
    if (index >= 0) {
      out += '[' + std::to_string(index) + ']';
    } else if (quote || (quote_if_needed && !identifier_like(key))) {
      out += quoted_key(key);
    } else if (!key.empty()) {
      if (!out.empty() && out.back() != '.') out += '.';
      out += key.size() <= kQuotedValueBytes ? std::string(key) : bounded(key);
    }
  }
};

}  // namespace gpu_admission::policy
