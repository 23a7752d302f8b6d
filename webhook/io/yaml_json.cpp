// parse_yaml_or_json and to_json_text (yaml_json.h): the checks every input goes through first
// (valid UTF-8, no control characters), the choice between JSON and YAML by the first significant
// character, and the JSON path (a depth check, then nlohmann's parser, which does not recurse). The YAML path is
// yaml_reader.cpp, to_yaml is yaml_writer.cpp.
#include "webhook/io/yaml_json.h"

#include "webhook/io/yaml_internal.h"

#include <cstdint>

namespace gpu_admission::webhook {
namespace {

using policy::SourceMark;

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";  // UTF-8

size_t first_significant(std::string_view text) {
  size_t i = 0;
  if (text.substr(0, 3) == kByteOrderMark) i = 3;  // UTF-8 byte order mark
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

// The offset of the bracket that opens a level deeper than `max_depth`, or npos. Checked before
// parsing so that the error names its place (nlohmann's parser itself keeps its stack on the heap).
size_t too_deep_offset(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string too_deep_message(int max_depth) { return "nesting deeper than " + std::to_string(max_depth) + " levels"; }

YamlParse parse_json(std::string_view text, const YamlLimits& limits) {
  YamlParse out;
  if (size_t at = too_deep_offset(text, limits.max_depth); at != std::string_view::npos) {
    out.error = YamlError{too_deep_message(limits.max_depth), mark_at_offset(text, at)};
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
  } catch (const Json::exception& e) {
    // out_of_range.406: a number too large for a double, e.g. 1e400.
    std::string message = e.what();
    size_t bracket = message.find("] ");
    out.error = YamlError{"invalid JSON: " + (bracket == std::string::npos ? message : message.substr(bracket + 2)), {}};
  }
  return out;
}

// Offset of the first byte that is not valid UTF-8 or is a control character, or npos. yaml-cpp can loop forever
// on invalid sequences, so text is checked before it gets there.
size_t invalid_utf8_offset(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      // YAML allows no C0 control characters but tab, LF and CR (and a NUL would make yaml-cpp
      // guess UTF-16); JSON allows them only escaped.
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
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

std::string hex_byte(unsigned char b) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string{kHex[b >> 4], kHex[b & 15]};
}

// The error for a text whose byte at `bad` is invalid UTF-8 or a control character.
YamlParse invalid_text(std::string_view text, size_t bad) {
  YamlParse out;
  const unsigned char b = static_cast<unsigned char>(text[bad]);
  const bool control = b < 0x20;
  out.error = YamlError{std::string(control ? "control character not allowed" : "invalid UTF-8") + " (byte 0x" +
                            hex_byte(b) + ")",
                        mark_at_offset(text, bad)};
  return out;
}

// JSON is recognised by its first significant character; anything else is YAML.
bool starts_like_json(std::string_view text) {
  size_t start = first_significant(text);
  return start < text.size() && (text[start] == '{' || text[start] == '[');
}

YamlParse parse_json_or_flow_yaml(std::string_view text, const YamlLimits& limits) {
  YamlParse json = parse_json(text.substr(0, 3) == kByteOrderMark ? text.substr(3) : text, limits);
  if (!json.error || json.error->message == too_deep_message(limits.max_depth)) return json;
  // Not valid JSON: it may still be YAML flow style. If YAML fails too, the JSON error is the
  // more useful one.
  YamlParse yaml = detail::parse_yaml_stream(text, limits);
  if (!yaml.error) return yaml;
  return json;
}

}  // namespace

YamlParse parse_yaml_or_json(std::string_view text, const YamlLimits& limits) {
  if (size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) return invalid_text(text, bad);
  if (starts_like_json(text)) return parse_json_or_flow_yaml(text, limits);
  return detail::parse_yaml_stream(text, limits);
}

std::string to_json_text(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpu_admission::webhook
