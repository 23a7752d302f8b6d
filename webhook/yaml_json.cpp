#include "webhook/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <regex>

namespace gpu_admission::webhook {
namespace {

using policy::SourceMark;

SourceMark mark_of(const YAML::Mark& m) {
  if (m.line < 0) return {};
  return {m.line + 1, m.column + 1};
}

bool is_null_scalar(std::string_view s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }
bool is_true(std::string_view s) { return s == "true" || s == "True" || s == "TRUE"; }
bool is_false(std::string_view s) { return s == "false" || s == "False" || s == "FALSE"; }

bool all_digits(std::string_view s, bool hex = false) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    if (!ok) return false;
  }
  return true;
}

// YAML 1.2 core schema resolution of a plain scalar.
Json resolve_plain(const std::string& s) {
  if (is_null_scalar(s)) return nullptr;
  if (is_true(s)) return true;
  if (is_false(s)) return false;
  std::string_view v = s;
  std::string_view digits = v;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (all_digits(digits)) {
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') return static_cast<int64_t>(n);
    errno = 0;
    if (!negative) {
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') return static_cast<uint64_t>(u);
    }
    return std::strtod(s.c_str(), nullptr);
  }
  if (v.size() > 2 && v[0] == '0' && v[1] == 'x' && all_digits(v.substr(2), true))
    return static_cast<int64_t>(std::strtoll(s.c_str() + 2, nullptr, 16));
  if (v.size() > 2 && v[0] == '0' && v[1] == 'o' && all_digits(v.substr(2)))
    return static_cast<int64_t>(std::strtoll(s.c_str() + 2, nullptr, 8));
  if (v == ".inf" || v == ".Inf" || v == ".INF" || v == "+.inf" || v == "-.inf" || v == ".nan" || v == ".NaN" ||
      v == ".NAN")
    return s;  // JSON has no infinities or NaN: keep the text
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kFloat)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;
}

class Converter {
 public:
  Converter(const YamlLimits& limits, policy::SourceMap& marks) : limits_(limits), marks_(marks) {}
  std::optional<YamlError> error;

  Json convert(const YAML::Node& node, const std::string& path, int depth) {
    if (error) return nullptr;
    if (depth > limits_.max_depth) {
      fail(node, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return nullptr;
    }
    if (++nodes_ > limits_.max_nodes) {
      fail(node, "more than " + std::to_string(limits_.max_nodes) + " nodes (aliases included)");
      return nullptr;
    }
    if (limits_.record_marks) marks_.set(path, mark_of(node.Mark()));
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null: return nullptr;
      case YAML::NodeType::Scalar: return scalar(node);
      case YAML::NodeType::Sequence: {
        Json out = Json::array();
        size_t i = 0;
        for (const auto& item : node) {
          out.push_back(convert(item, policy::index_path(path, i++), depth + 1));
          if (error) return nullptr;
        }
        return out;
      }
      case YAML::NodeType::Map: {
        Json out = Json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            fail(kv.first, "mapping keys must be strings");
            return nullptr;
          }
          const std::string& key = kv.first.Scalar();
          std::string child = policy::child_path(path, key);
          if (out.contains(key)) {
            fail(kv.first, "duplicate key \"" + key + "\"" + (path.empty() ? "" : " in " + path));
            return nullptr;
          }
          out[key] = convert(kv.second, child, depth + 1);
          if (error) return nullptr;
        }
        return out;
      }
    }
    return nullptr;
  }

 private:
  void fail(const YAML::Node& node, std::string message) {
    if (!error) error = YamlError{std::move(message), mark_of(node.Mark())};
  }

  Json scalar(const YAML::Node& node) {
    const std::string& tag = node.Tag();
    const std::string& text = node.Scalar();
    if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "!!str") return text;  // quoted or explicit string
    if (tag == "?" || tag.empty()) return resolve_plain(text);
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" || tag == "tag:yaml.org,2002:bool" ||
        tag == "tag:yaml.org,2002:null")
      return resolve_plain(text);
    return text;  // unknown tags: keep the text
  }

  const YamlLimits& limits_;
  policy::SourceMap& marks_;
  size_t nodes_ = 0;
};

size_t first_significant(std::string_view text) {
  size_t i = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 byte order mark
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  return i;
}

SourceMark mark_at_offset(std::string_view text, size_t offset) {
  SourceMark m{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++m.line;
      m.column = 1;
    } else {
      ++m.column;
    }
  }
  return m;
}

// Depth check before handing JSON to a recursive parser.
bool json_depth_ok(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

YamlParse parse_json(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  if (!json_depth_ok(text, limits.max_depth)) {
    out.error = YamlError{"nesting deeper than " + std::to_string(limits.max_depth) + " levels", {}};
    return out;
  }
  try {
    YamlDocument doc;
    doc.value = Json::parse(text.begin(), text.end());
    doc.line = 1;
    out.documents.push_back(std::move(doc));
  } catch (const Json::parse_error& e) {
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> keep the reason.
    size_t colon = message.find(": ");
    out.error = YamlError{"invalid JSON: " + (colon == std::string::npos ? message : message.substr(colon + 2)),
                          mark_at_offset(text, e.byte == 0 ? 0 : e.byte - 1)};
  }
  return out;
}

}  // namespace

static YamlParse parse_yaml_or_json_as_yaml(std::string_view text, const YamlLimits& limits);

// Offset of the first byte that is not part of valid UTF-8, or npos. yaml-cpp can loop forever
// on invalid sequences, so text is checked before it gets there.
static size_t invalid_utf8_offset(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return i;
    i += len;
  }
  return std::string_view::npos;
}

YamlParse parse_yaml_or_json(std::string_view text, const YamlLimits& limits) {
  if (size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    YamlParse out;
    out.error = YamlError{"invalid UTF-8 (byte 0x" + [&] {
                            static constexpr char kHex[] = "0123456789abcdef";
                            unsigned char b = static_cast<unsigned char>(text[bad]);
                            return std::string{kHex[b >> 4], kHex[b & 15]};
                          }() + ")",
                          mark_at_offset(text, bad)};
    return out;
  }
  size_t start = first_significant(text);
  if (start < text.size() && (text[start] == '{' || text[start] == '[')) {
    YamlParse json = parse_json(text.substr(0, 3) == "\xEF\xBB\xBF" ? text.substr(3) : text, limits);
    if (!json.error) return json;
    // Not valid JSON: it may still be YAML flow style. If YAML fails too, the JSON error is the
    // more useful one.
    YamlParse yaml = parse_yaml_or_json_as_yaml(text, limits);
    if (!yaml.error) return yaml;
    return json;
  }
  return parse_yaml_or_json_as_yaml(text, limits);
}

static YamlParse parse_yaml_or_json_as_yaml(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    out.error = YamlError{"invalid YAML: " + e.msg, mark_of(e.mark)};
    return out;
  } catch (const std::exception& e) {
    out.error = YamlError{std::string("invalid YAML: ") + e.what(), {}};
    return out;
  }
  for (const auto& node : nodes) {
    if (!node.IsDefined() || node.IsNull()) continue;
    YamlDocument doc;
    doc.line = mark_of(node.Mark()).line;
    Converter converter(limits, doc.marks);
    try {
      doc.value = converter.convert(node, "", 0);
    } catch (const YAML::Exception& e) {
      out.error = YamlError{"invalid YAML: " + e.msg, mark_of(e.mark)};
      return out;
    }
    if (converter.error) {
      out.error = converter.error;
      return out;
    }
    out.documents.push_back(std::move(doc));
  }
  return out;
}

std::string to_json_text(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

namespace {

void emit(YAML::Emitter& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (auto it = v.begin(); it != v.end(); ++it) {
        out << YAML::Key;
        const std::string& key = it.key();
        if (!resolve_plain(key).is_string() || key.empty()) out << YAML::DoubleQuoted << key;
        else out << key;
        out << YAML::Value;
        emit(out, it.value());
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(out, item);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.empty() || !resolve_plain(s).is_string()) out << YAML::DoubleQuoted << s;
      else out << s;
      return;
    }
    case Json::value_t::boolean: out << (v.get<bool>() ? "true" : "false"); return;
    case Json::value_t::null: out << YAML::Null; return;
    default: out << to_json_text(v); return;  // numbers as JSON writes them
  }
}

}  // namespace

std::string to_yaml(const Json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace gpu_admission::webhook
