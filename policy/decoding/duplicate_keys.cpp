// The whole-document duplicate-key check for documents parsed into a DOM (claims, ML workload
// kinds, the command line's input). The request path's On-Demand readers check the keys they
// read as they read them instead (policy/decoding/json_reader.h).
#include <algorithm>
#include <array>
#include <cstddef>
#include <memory_resource>
#include <string>
#include <vector>

#include "policy/base/quoted_value.h"
#include "policy/decoding/dom_reader.h"
#include "policy/decoding/pod_decoder.h"

namespace gpu_admission::policy {
namespace {

using dom::array;
using dom::element;
using dom::element_type;
using dom::object;

// Duplicate keys make JSON ambiguous: simdjson finds the first, the API server's Go decoder and
// most tools keep the last. A security check must not read a different object than the one that
// gets stored, so an object with a duplicate key anywhere is refused.
bool find_duplicate_key(element e, const Loc& at, std::pmr::vector<std::string_view>& keys, std::string& field,
                        std::string& key_out) {
  if (e.type() == element_type::ARRAY) {
    size_t i = 0;
    array items = e.get_array().value_unsafe();
    for (element item : items) {
      Loc item_at = at.item(i++);
      if (find_duplicate_key(item, item_at, keys, field, key_out)) return true;
    }
    return false;
  }
  if (e.type() != element_type::OBJECT) return false;
  object obj = e.get_object().value_unsafe();
  const size_t base = keys.size();
  for (auto [key, value] : obj) keys.push_back(key);
  const auto object_keys = keys.begin() + static_cast<std::ptrdiff_t>(base);
  std::optional<std::string_view> duplicate;
  if (keys.size() - base <= 16) {
    // Small objects, nearly all of them: comparing each pair is cheaper than sorting.
    for (auto i = object_keys; i != keys.end() && !duplicate; ++i)
      for (auto j = object_keys; j != i; ++j)
        if (*i == *j) {
          duplicate = *i;
          break;
        }
  } else {
    // Large objects (a label map of 100,000 keys is a valid body) in n log n.
    std::sort(object_keys, keys.end());
    const auto repeated = std::adjacent_find(object_keys, keys.end());
    if (repeated != keys.end()) duplicate = *repeated;
  }
  keys.resize(base);
  if (duplicate) {
    at.render(field);
    key_out = *duplicate;
    return true;
  }
  for (auto [key, value] : obj) {
    if (value.type() != element_type::OBJECT && value.type() != element_type::ARRAY) continue;
    Loc child = at.auto_key(key);
    if (find_duplicate_key(value, child, keys, field, key_out)) return true;
  }
  return false;
}

}  // namespace

std::optional<DecodeError> find_duplicate_keys(element root) {
  // The keys of one object at a time, in an arena on the stack (a large object spills to the heap
  // for this call only).
  std::array<std::byte, 2048> bytes;
  std::pmr::monotonic_buffer_resource scratch(bytes.data(), bytes.size());
  std::pmr::vector<std::string_view> keys(&scratch);
  std::string field, key;
  if (!find_duplicate_key(root, Loc{}, keys, field, key)) return std::nullopt;
  return DecodeError{field, "duplicate key " + quoted(key) + " (ambiguous JSON is refused)"};
}

}  // namespace gpu_admission::policy
