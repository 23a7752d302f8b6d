// spec.runtimeClasses, spec.pools[].runtimeClasses and spec.deviceTolerations; see
// device_access_fields.h.
#include "policy/config/device_access_fields.h"

#include <algorithm>
#include <array>

#include "policy/base/source.h"

namespace gpu_admission::policy {
namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// A label value: 63 characters at most, letters, digits, '-', '_' and '.', starting and ending
// with a letter or digit; may be empty.
bool is_label_value(std::string_view v) {
  if (v.empty()) return true;
  if (v.size() > 63 || !alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(), [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A label key: an optional DNS-subdomain prefix and '/', then a non-empty label value.
bool is_label_key(std::string_view k) {
  const size_t slash = k.find('/');
  if (slash != std::string_view::npos && !is_dns1123_subdomain(k.substr(0, slash))) return false;
  const std::string_view name = slash == std::string_view::npos ? k : k.substr(slash + 1);
  return !name.empty() && is_label_value(name);
}

const char* type_of(const Json& v) {
  if (v.is_object()) return "a mapping";
  if (v.is_array()) return "a list";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  return "null";
}

// The string at `key` of `entry` into `out` (absent or null: left as it is).
bool read_string_field(const Json& entry, const char* key, const std::string& path, std::string& out,
                       const FieldReaderSink& sink) {
  if (!entry.contains(key) || entry[key].is_null()) return true;
  if (!entry[key].is_string()) {
    sink.error(child_path(path, key), std::string("must be a string, got ") + type_of(entry[key]));
    return false;
  }
  out = entry[key].get<std::string>();
  return true;
}

constexpr std::array<std::string_view, 2> kOperators = {"Exists", "Equal"};
constexpr std::array<std::string_view, 3> kEffects = {"", "NoSchedule", "NoExecute"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& names, std::string_view v) {
  return std::find(names.begin(), names.end(), v) != names.end();
}

// One entry; false when it has an error (reported).
bool read_toleration(const Json& entry, const std::string& path, TolerationConfig& t, const FieldReaderSink& sink) {
  if (!entry.is_object()) {
    sink.error(path, std::string("must be a mapping, got ") + type_of(entry));
    return false;
  }
  sink.check_fields(entry, path);
  bool ok = read_string_field(entry, "key", path, t.key, sink);
  ok = read_string_field(entry, "operator", path, t.op, sink) && ok;
  ok = read_string_field(entry, "value", path, t.value, sink) && ok;
  ok = read_string_field(entry, "effect", path, t.effect, sink) && ok;
  if (!ok) return false;
  if (t.op.empty()) t.op = "Equal";  // as the API server defaults it
  if (!t.key.empty() && !is_label_key(t.key)) {
    sink.error(child_path(path, "key"), "\"" + t.key + "\" is not a valid label key");
    ok = false;
  }
  if (!one_of(kOperators, t.op)) {
    sink.error(child_path(path, "operator"), "invalid value \"" + t.op + "\" (expected Exists | Equal)");
    return false;
  }
  if (t.op == "Exists" && !t.value.empty()) {
    sink.error(child_path(path, "value"), "must be empty with operator Exists");
    ok = false;
  } else if (t.op == "Equal" && !is_label_value(t.value)) {
    sink.error(child_path(path, "value"), "\"" + t.value + "\" is not a valid label value");
    ok = false;
  }
  if (t.key.empty() && t.op != "Exists") {
    sink.error(path, "an empty key needs operator Exists (which tolerates every device taint)");
    ok = false;
  }
  if (!one_of(kEffects, t.effect)) {
    sink.error(child_path(path, "effect"), "invalid value \"" + t.effect + "\" (expected NoSchedule | NoExecute, or "
                                           "none for every effect)");
    ok = false;
  }
  return ok;
}

}  // namespace

bool is_dns1123_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    const std::string_view label = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !lower_alnum(label.front()) || !lower_alnum(label.back())) return false;
    if (!std::all_of(label.begin(), label.end(), [](char c) { return lower_alnum(c) || c == '-'; })) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

void read_runtime_classes(const Json& v, const std::string& path, std::vector<std::string>& out,
                          const FieldReaderSink& sink) {
  out.clear();
  if (v.is_null()) return;
  if (!v.is_array()) {
    sink.error(path, std::string("must be a list of RuntimeClass names, got ") + type_of(v));
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = index_path(path, i);
    if (!v[i].is_string()) {
      sink.error(at, std::string("must be a string, got ") + type_of(v[i]));
      continue;
    }
    std::string name = v[i].get<std::string>();
    if (!is_dns1123_subdomain(name)) {
      sink.error(at, "\"" + name + "\" is not a RuntimeClass name (a DNS-1123 subdomain: lowercase letters, digits, "
                                   "'-' and '.')");
    } else if (std::find(out.begin(), out.end(), name) != out.end()) {
      sink.error(at, "\"" + name + "\" is listed twice");
    } else {
      out.push_back(std::move(name));
    }
  }
}

void read_device_tolerations(const Json& v, const std::string& path, std::vector<TolerationConfig>& out,
                             const FieldReaderSink& sink) {
  out.clear();
  if (v.is_null()) return;
  if (!v.is_array()) {
    sink.error(path, std::string("must be a list of tolerations, got ") + type_of(v));
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    TolerationConfig t;
    if (read_toleration(v[i], index_path(path, i), t, sink)) out.push_back(std::move(t));
  }
}

Json device_tolerations_to_json(const std::vector<TolerationConfig>& list) {
  Json out = Json::array();
  for (const auto& t : list) {
    Json o = Json::object();
    if (!t.key.empty()) o["key"] = t.key;
    o["operator"] = t.op;
    if (!t.value.empty()) o["value"] = t.value;
    if (!t.effect.empty()) o["effect"] = t.effect;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace gpu_admission::policy
