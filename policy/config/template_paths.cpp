// The template path language and its expansion over a simdjson DOM.
#include "policy/config/template_paths.h"
#include "policy/config/template_finder.h"

#include "policy/base/quoted_value.h"
#include "policy/decoding/dom_reader.h"

namespace gpu_admission::policy {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Parses one dot-separated segment: `name`, `name[*]...` or `*`.
std::optional<std::string> parse_segment(std::string_view seg, size_t number, std::vector<PathStep>& steps) {
  const std::string where = "segment " + std::to_string(number + 1);
  if (seg.empty()) return where + " is empty (two dots, or a dot at the start or end)";
  if (seg == "*") {
    if (number == 0) return std::string("must start with a field name, not *");
    steps.push_back({PathStep::Kind::MapValues, {}});
    return std::nullopt;
  }
  size_t i = 0;
  while (i < seg.size() && name_char(seg[i])) ++i;
  if (i == 0) return where + " \"" + std::string(seg) + "\" must start with a field name";
  steps.push_back({PathStep::Kind::Field, std::string(seg.substr(0, i))});
  while (i < seg.size()) {
    if (seg.substr(i, 3) != "[*]")
      return where + " \"" + std::string(seg) + "\": unexpected \"" + std::string(seg.substr(i)) +
             "\" (only [*], every item of a list, may follow a field name)";
    steps.push_back({PathStep::Kind::ListItems, {}});
    i += 3;
  }
  return std::nullopt;
}

// The field path shows a map key of the object (a tenant's) bounded (policy/base/quoted_value.h);
// the JSON pointer keeps it exactly.
void add_key(std::string& field, std::string& pointer, std::string_view key) {
  if (identifier_like(key)) {
    if (!field.empty()) field += '.';
    field += key.size() <= kQuotedValueBytes ? std::string(key) : bounded(key);
  } else {
    field += quoted_key(key);
  }
  pointer += '/';
  for (char c : key) {
    if (c == '~') pointer += "~0";
    else if (c == '/') pointer += "~1";
    else pointer += c;
  }
}

struct Walker {
  const std::vector<PathStep>& steps;
  std::vector<TemplateMatch>& out;
  bool pod_spec;  // the path names pod specs

  std::optional<DecodeError> walk(element e, size_t i, std::string field, std::string pointer) {
    if (e.type() == element_type::NULL_VALUE) return std::nullopt;
    if (i == steps.size()) {
      if (e.type() != element_type::OBJECT)
        return DecodeError{field, pod_spec ? "must be an object (a pod spec)" : "must be an object (a pod template)"};
      std::string prefix = field + '.';
      out.push_back({std::move(field), std::move(prefix), std::move(pointer), e, pod_spec});
      return std::nullopt;
    }
    const PathStep& step = steps[i];
    if (step.kind == PathStep::Kind::ListItems) {
      if (e.type() != element_type::ARRAY) return DecodeError{field, "must be a list"};
      size_t index = 0;
      simdjson::dom::array list = e.get_array().value_unsafe();
      for (element item : list) {
        std::string f = field + '[' + std::to_string(index) + ']';
        if (auto err = walk(item, i + 1, std::move(f), pointer + '/' + std::to_string(index))) return err;
        ++index;
      }
      return std::nullopt;
    }
    if (e.type() != element_type::OBJECT) return DecodeError{field, "must be an object"};
    simdjson::dom::object obj = e.get_object().value_unsafe();
    if (step.kind == PathStep::Kind::Field) {
      auto child = obj.at_key(step.name);
      if (child.error()) return std::nullopt;
      add_key(field, pointer, step.name);
      return walk(child.value_unsafe(), i + 1, std::move(field), std::move(pointer));
    }
    for (auto [key, value] : obj) {
      std::string f = field, p = pointer;
      add_key(f, p, key);
      if (auto err = walk(value, i + 1, std::move(f), std::move(p))) return err;
    }
    return std::nullopt;
  }
};

}  // namespace

std::optional<std::string> parse_template_path(std::string_view text, TemplatePath& out) {
  out.text = std::string(text);
  out.steps.clear();
  if (text.empty()) return std::string("must not be empty");
  size_t start = 0, number = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view seg = text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (auto err = parse_segment(seg, number, out.steps)) return "\"" + std::string(text) + "\": " + *err;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
    ++number;
  }
  return std::nullopt;
}

std::string_view api_group_of(std::string_view api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view{} : api_version.substr(0, slash);
}

std::optional<DecodeError> find_templates(element object, const WorkloadKindDef& def, std::vector<TemplateMatch>& out) {
  out.clear();
  for (const TemplatePath& path : def.templates) {
    Walker w{path.steps, out, path.pod_spec};
    if (auto err = w.walk(object, 0, {}, {})) return err;
  }
  return std::nullopt;
}

}  // namespace gpu_admission::policy
