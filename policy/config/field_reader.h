// The policy loader's field reader: typed reads of a policy's JSON tree that collect every
// problem (wrong type, bad enum value, unknown field) with its field path and source mark instead
// of stopping at the first. The loader and the readers of its sections in other files
// (rollout_fields.cpp) share it.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/ids.h"
#include "policy/base/json.h"
#include "policy/base/source.h"
#include "policy/config/device_access_fields.h"
#include "policy/config/policy_config.h"

namespace gpu_admission::policy {

// The keys a mapping may hold (from the policy schema's tables, policy_schema.h).
using FieldNames = std::span<const std::string_view>;

// "a, b, c": the names an "unknown ..." error lists.
template <size_t N>
std::string names_list(const std::array<std::string_view, N>& names) {
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// "a mapping", "a list", "a string", ...: what a value is, for messages.
inline const char* type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "a mapping";
    case Json::value_t::array: return "a list";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

class FieldReader {
 public:
  FieldReader(const SourceMap& marks, Issues& issues) : marks_(marks), issues_(issues) {}

  // For the readers of other files (device_access_fields.h): errors here, fields against `known`.
  FieldReaderSink sink(FieldNames known = {}) {
    return {[this](const std::string& path, std::string message) { error(path, std::move(message)); },
            [this, known](const Json& object, const std::string& path) { check_fields(object, path, known); }};
  }

  void error(const std::string& path, std::string message) {
    issues_.push_back({Issue::Severity::Error, path, std::move(message), marks_.find(path)});
  }

  // Reports fields of `object` that are not in `known`.
  void check_fields(const Json& object, const std::string& path, FieldNames known) {
    for (auto it = object.begin(); it != object.end(); ++it) {
      bool found = false;
      for (auto k : known) found = found || k == it.key();
      if (!found) {
        std::string expected;
        for (auto k : known) {
          if (!expected.empty()) expected += ", ";
          expected += k;
        }
        error(child_path(path, it.key()), "unknown field \"" + it.key() + "\" (expected one of: " + expected + ")");
      }
    }
  }

  bool expect_object(const Json& v, const std::string& path) {
    if (v.is_object()) return true;
    error(path, std::string("must be a mapping, got ") + type_name(v));
    return false;
  }

  bool read_string(const Json& v, const std::string& path, std::string& out, bool allow_empty = true) {
    if (!v.is_string()) {
      error(path, std::string("must be a string, got ") + type_name(v));
      return false;
    }
    out = v.get<std::string>();
    if (!allow_empty && out.empty()) {
      error(path, "must not be empty");
      return false;
    }
    return true;
  }

  void read_string_list(const Json& v, const std::string& path, std::vector<std::string>& out) {
    if (v.is_null()) { out.clear(); return; }
    if (!v.is_array()) {
      error(path, std::string("must be a list of strings, got ") + type_name(v));
      return;
    }
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string s;
      if (read_string(v[i], index_path(path, i), s, false)) out.push_back(std::move(s));
    }
  }

  void read_string_map(const Json& v, const std::string& path, StringPairs& out) {
    out.clear();
    if (v.is_null()) return;
    if (!expect_object(v, path)) return;
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string value;
      if (read_string(it.value(), child_path(path, it.key()), value)) out.emplace_back(it.key(), std::move(value));
    }
  }

  bool read_bool(const Json& v, const std::string& path, bool& out) {
    if (!v.is_boolean()) {
      error(path, std::string("must be true or false, got ") + type_name(v));
      return false;
    }
    out = v.get<bool>();
    return true;
  }

  void read_count(const Json& v, const std::string& path, std::optional<int64_t>& out) {
    if (v.is_null()) { out.reset(); return; }
    if (!v.is_number_integer() && !v.is_number_unsigned()) {
      error(path, std::string("must be a whole number, got ") + type_name(v));
      return;
    }
    if (v.is_number_unsigned() && v.get<uint64_t>() > 1'000'000) {
      error(path, "must be at most 1000000");
      return;
    }
    int64_t n = v.get<int64_t>();
    if (n < 0 || n > 1'000'000) {
      error(path, "must be between 0 and 1000000");
      return;
    }
    out = n;
  }

  template <typename Enum, size_t N>
  bool read_enum(const Json& v, const std::string& path, const std::array<std::string_view, N>& names, Enum& out) {
    std::string text;
    if (!read_string(v, path, text)) return false;
    if (auto e = enum_from_name<Enum>(names, text)) {
      out = *e;
      return true;
    }
    std::string expected;
    for (auto n : names) {
      if (!expected.empty()) expected += " | ";
      expected += n;
    }
    error(path, "invalid value \"" + text + "\" (expected " + expected + ")");
    return false;
  }

  void read_taints(const Json& v, const std::string& path, FieldNames fields, std::vector<TaintConfig>& out) {
    out.clear();
    if (v.is_null()) return;
    if (!v.is_array()) {
      error(path, std::string("must be a list of taints, got ") + type_name(v));
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      std::string p = index_path(path, i);
      const Json& t = v[i];
      if (!expect_object(t, p)) continue;
      check_fields(t, p, fields);
      TaintConfig taint;
      bool ok = true;
      if (t.contains("key")) ok = read_string(t["key"], child_path(p, "key"), taint.key, false) && ok;
      else { error(p, "missing required field \"key\""); ok = false; }
      if (t.contains("value")) ok = read_string(t["value"], child_path(p, "value"), taint.value) && ok;
      if (t.contains("effect")) {
        ok = read_string(t["effect"], child_path(p, "effect"), taint.effect) && ok;
        if (ok && taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" && taint.effect != "NoExecute") {
          error(child_path(p, "effect"),
                "invalid value \"" + taint.effect + "\" (expected NoSchedule | PreferNoSchedule | NoExecute)");
          ok = false;
        }
      } else {
        error(p, "missing required field \"effect\"");
        ok = false;
      }
      if (ok) out.push_back(std::move(taint));
    }
  }

 private:
  const SourceMap& marks_;
  Issues& issues_;
};

}  // namespace gpu_admission::policy
