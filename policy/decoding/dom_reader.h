// Reading a simdjson DOM with field paths for errors (the claim decoder and the template finder):
// typed getters that record the first error, located with a Loc (policy/base/field_loc.h). Absent and
// null members read as absent. The pod decoder reads On-Demand instead (policy/decoding/json_reader.h).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "policy/base/field_loc.h"
#include "policy/decoding/pod_decoder.h"  // DecodeError

namespace gpu_admission::policy::dom {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

using policy::Loc;

// Typed getters; the first failure is kept in `error`, its field prefixed with `prefix`.
class Reader {
 public:
  explicit Reader(std::string_view prefix = {}) : prefix_(prefix) {}

  std::optional<DecodeError> error;

  bool fail(const Loc& at, const char* message) {
    if (!error) {
      std::string field(prefix_);
      at.render(field);
      error = DecodeError{std::move(field), message};
    }
    return false;
  }

  static bool get(object obj, std::string_view key, element& out) {
    auto r = obj.at_key(key);
    if (r.error()) return false;
    out = r.value_unsafe();
    return out.type() != element_type::NULL_VALUE;
  }

  bool as_object(element e, object& out, const Loc& at) {
    if (e.type() != element_type::OBJECT) return fail(at, "must be an object");
    out = e.get_object().value_unsafe();
    return true;
  }
  bool as_array(element e, array& out, const Loc& at) {
    if (e.type() != element_type::ARRAY) return fail(at, "must be a list");
    out = e.get_array().value_unsafe();
    return true;
  }
  bool as_string(element e, std::string_view& out, const Loc& at) {
    if (e.type() != element_type::STRING) return fail(at, "must be a string");
    out = e.get_string().value_unsafe();
    return true;
  }
  bool optional_string(object obj, std::string_view key, std::string_view& out, const Loc& at) {
    element e;
    if (!get(obj, key, e)) return true;
    return as_string(e, out, at.child(key));
  }
  bool optional_bool(object obj, std::string_view key, bool& out, const Loc& at) {
    element e;
    if (!get(obj, key, e)) return true;
    if (e.type() != element_type::BOOL) return fail(at.child(key), "must be true or false");
    out = e.get_bool().value_unsafe();
    return true;
  }
  // Calls `each(item, item_at, index)` for every entry of the list at `key` (absent or null: no
  // call), requiring a list there and an object in every entry; stops at the first false.
  template <typename Each>
  bool each_object(object parent, std::string_view key, const Loc& parent_at, Each each) {
    element v;
    if (!get(parent, key, v)) return true;
    Loc at = parent_at.child(key);
    array list;
    if (!as_array(v, list, at)) return false;
    uint32_t i = 0;
    for (element e : list) {
      Loc item_at = at.item(i);
      object item;
      if (!as_object(e, item, item_at) || !each(item, item_at, i)) return false;
      ++i;
    }
    return true;
  }

  // Finds `key` and requires an object there; false with no error when absent.
  bool child_object(object parent, std::string_view key, object& out, const Loc& at) {
    element e;
    if (!get(parent, key, e)) return false;
    return as_object(e, out, at);
  }

 protected:
  std::string_view prefix_;
};

// The start of decoding an object of an API kind (claims, claim templates, PodGroups): it must be a
// JSON object (without duplicate keys, when `check_duplicates`) with a string apiVersion, which goes
// to `api_version`. A list item, whose apiVersion is its list's, may leave it out and take
// `assumed_api_version`; null or another type is still an error. Whether the version is served is
// the caller's to say.
inline std::optional<DecodeError> open_api_object(element object_el, bool check_duplicates,
                                                  std::string_view assumed_api_version, object& obj,
                                                  std::string_view& api_version) {
  if (object_el.type() != element_type::OBJECT) return DecodeError{"", "the object must be a JSON object"};
  if (check_duplicates)
    if (auto err = find_duplicate_keys(object_el)) return err;
  obj = object_el.get_object().value_unsafe();
  element e;
  const bool has_version = obj.at_key("apiVersion").get(e) == simdjson::SUCCESS;
  if (!has_version && !assumed_api_version.empty()) {
    api_version = assumed_api_version;
  } else if (!has_version || e.type() != element_type::STRING) {
    return DecodeError{"apiVersion", "missing or not a string"};
  } else {
    api_version = e.get_string().value_unsafe();
  }
  return std::nullopt;
}

}  // namespace gpu_admission::policy::dom
